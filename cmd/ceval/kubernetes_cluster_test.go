package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/kubetest"
	"ceval.dev/ceval/kube"
	"ceval.dev/ceval/record"
)

// kubeCLISetup readies the test cluster for ceval run --backend kubernetes: a namespace of
// the test's own, the init and default images in the node, and a config file naming them.
func kubeCLISetup(t *testing.T) (*kube.Cluster, string, string) {
	t.Helper()
	c := kubetest.Connect(t)
	ns := kubetest.Namespace(t, c)
	kubetest.InitImage(t)
	node, nctx := kubetest.NodeContainerd(t)
	if _, err := images.EnsureDefault(nctx, node, images.DefaultOptions{}); err != nil {
		t.Fatalf("the default image into the node: %v", err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	doc := "backend: kubernetes\nkubernetes:\n  kubeconfig: " + os.Getenv(kubetest.KubeconfigEnv) + "\n  namespace: " + ns + "\n  image_pull_policy: Never\n"
	if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return c, ns, cfg
}

// A 20-run experiment at -j 4 on the cluster, one of whose Pods is deleted while its agent
// runs: that run is tried again (counted in its attempt, never charged to the agent), the
// summary is the same as a local run of the plan (20 successes), and nothing is left.
func TestKubeExperimentRetriesADeletedPod(t *testing.T) {
	c, ns, cfg := kubeCLISetup(t)
	dir := t.TempDir()
	taskDoc := "task_id: kube-exp\ninitial_prompt: p\nagent: {type: command, command: [sh, -c, 'sleep 3; echo ok > out.txt']}\n" +
		"sandbox: {limits: {timeout: 60s}}\nsuccess_criteria: [{type: file_exists, path: out.txt}]\n"
	if err := os.WriteFile(filepath.Join(dir, "task.yaml"), []byte(taskDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	exp := filepath.Join(dir, "experiment.yaml")
	if err := os.WriteFile(exp, []byte("experiment_id: kube-exp\ntasks: [task.yaml]\nrepeats: 20\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	cmd := exec.Command(cevalBin, "run", "--config", cfg, "--runs-dir", runs, "-j", "4", exp)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Delete the first Pod seen running for a second (its agent sleeps 3 s).
	ctx := context.Background()
	deleted := ""
	for deleted == "" {
		select {
		case err := <-done:
			t.Fatalf("the experiment ended before a Pod could be deleted: %v\n%s%s", err, out.String(), errb.String())
		case <-time.After(200 * time.Millisecond):
		}
		pods, err := kubetest.Clientset(t, c).CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.StartTime != nil && time.Since(p.Status.StartTime.Time) > 1500*time.Millisecond {
				if err := kubetest.Clientset(t, c).CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
					t.Fatal(err)
				}
				deleted = p.Name
				break
			}
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the experiment did not end within 10 minutes\n%s%s", out.String(), errb.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit %d after deleting pod %s\n%s%s", code, deleted, out.String(), errb.String())
	}
	entries, _ := filepath.Glob(filepath.Join(runs, "*", "summary.json"))
	if len(entries) != 1 {
		t.Fatalf("summary files %v", entries)
	}
	var sum struct {
		Total     int            `json:"total"`
		ByStatus  map[string]int `json:"by_status"`
		Successes int            `json:"successes"`
	}
	data, _ := os.ReadFile(entries[0])
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	results, _ := filepath.Glob(filepath.Join(filepath.Dir(entries[0]), "default", "kube-exp", "*", record.ResultFile))
	retried, success := 0, 0
	for _, p := range results {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var r record.Result
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		if r.Status == "SUCCESS" {
			success++
		} else {
			ev, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "events.jsonl"))
			t.Errorf("run %s: %s %s limits %v agent %+v\nevents:\n%s", filepath.Dir(p), r.Status, r.Error, r.LimitsHit, r.Agent, ev)
		}
		if r.Attempt > 1 {
			retried++
		}
	}
	if len(results) != 20 || success != 20 || retried < 1 {
		t.Fatalf("%d results, %d successes, %d retried (pod %s deleted); summary %s\nstderr:\n%s", len(results), success, retried, deleted, data, errb.String())
	}
	if err := kubetest.Leftovers(ctx, c, ns); err != nil {
		t.Errorf("left after the experiment: %v", err)
	}
}

// Ctrl-C of ceval run on the cluster: the agent is stopped, the run recorded as
// interrupted (exit 3), and its Pod and NetworkPolicy deleted.
func TestKubeRunInterruptedBySIGINTLeavesNothing(t *testing.T) {
	c, ns, cfg := kubeCLISetup(t)
	tmp := privateTMPDIR(t)
	cmd, runs := startKubeSleeper(t, cfg, "kube-sigint")
	below := descendants(cmd.Process.Pid)
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("ceval did not stop after SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	if left := stillRunning(below); len(left) > 0 {
		t.Errorf("still running after ceval exited: %v", left)
	}
	if left := cevalTempLeft(tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
	results, _ := filepath.Glob(filepath.Join(runs, "*", "default", "kube-sigint", "1", "result.json"))
	if len(results) != 1 {
		t.Fatalf("no result.json in %s", runs)
	}
	if data, _ := os.ReadFile(results[0]); !strings.Contains(string(data), `"interrupted": true`) {
		t.Errorf("result.json does not say interrupted:\n%s", data)
	}
	if err := kubetest.Leftovers(context.Background(), c, ns); err != nil {
		t.Errorf("left behind: %v", err)
	}
}

// startKubeSleeper starts ceval run of a sleeping agent on the cluster and returns once the
// agent runs, with its runs directory.
func startKubeSleeper(t *testing.T, cfg, taskID string) (*exec.Cmd, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(p, []byte("task_id: "+taskID+"\ninitial_prompt: p\nagent: {type: command, command: [sleep, \"1000\"]}\nsuccess_criteria: [{type: file_exists, path: x}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	cmd := exec.Command(cevalBin, "run", "--config", cfg, "--runs-dir", runs, p)
	errb := &lockedBuffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	for end := time.Now().Add(2 * time.Minute); !strings.Contains(errb.String(), "agent_started"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the agent never started:\n%s", errb.String())
		}
	}
	return cmd, runs
}

// lockedBuffer is a bytes.Buffer a running command writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// kill -9 of a ceval that runs on the cluster leaves its Pod and NetworkPolicy; ceval gc
// --backend kubernetes removes them (and keeps what a live ceval owns).
func TestKubeKill9ThenGCLeavesNothing(t *testing.T) {
	c, ns, cfg := kubeCLISetup(t)
	cmd, _ := startKubeSleeper(t, cfg, "kube-orphan")
	ctx := context.Background()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if err := kubetest.Leftovers(ctx, c, ns); err == nil {
		t.Fatal("kill -9 of ceval left nothing to collect: the test proves nothing")
	}
	r := ceval(t, "gc", "--config", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "removed") {
		t.Fatalf("gc: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := kubetest.Leftovers(ctx, c, ns); err != nil {
		t.Fatalf("after gc: %v\n%s", err, r.stdout)
	}
	if r := ceval(t, "gc", "--config", cfg); r.code != 0 || !strings.Contains(r.stdout, "removed 0, kept 0") {
		t.Fatalf("a second gc: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
