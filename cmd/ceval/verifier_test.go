package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apitasks "github.com/containerd/containerd/api/services/tasks/v1"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/launcher"
)

// containerTask writes a task whose one criterion runs in a verifier container, and a
// workspace holding answer.txt.
func containerTask(t *testing.T, answer string) (taskPath, workspace string) {
	t.Helper()
	dir := t.TempDir()
	taskPath = filepath.Join(dir, "task.yaml")
	doc := "task_id: verified\ninitial_prompt: p\nsuccess_criteria:\n" +
		"  - {type: run_command, sandbox: container, command: 'test \"$(cat answer.txt)\" = 42', memory_mb: 128, pids: 32}\n"
	if err := os.WriteFile(taskPath, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	workspace = filepath.Join(dir, "ws")
	if err := os.Mkdir(workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(workspace, "answer.txt"), []byte(answer+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return taskPath, workspace
}

func TestGradeWithoutContainerdLeavesContainerCriteriaNotGraded(t *testing.T) {
	p, ws := containerTask(t, "42")
	r := ceval(t, "grade", "--containerd-address", "/nonexistent/containerd.sock", p, "--workspace", ws)
	if r.code != 3 || !strings.Contains(r.stdout, "NOT_GRADED") || !strings.Contains(r.stdout, "containerd") {
		t.Errorf("exit %d, stdout %q, want 3 and NOT_GRADED saying containerd", r.code, r.stdout)
	}
}

func TestGradeRunsContainerCriteriaInAVerifier(t *testing.T) {
	_, _ = ctrtest.Connect(t)
	p, ws := containerTask(t, "42")
	if r := ceval(t, "grade", "--namespace", ctrtest.Namespace, p, "--workspace", ws); r.code != 0 {
		t.Errorf("right answer: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	p, ws = containerTask(t, "41")
	if r := ceval(t, "grade", "--namespace", ctrtest.Namespace, p, "--workspace", ws); r.code != 1 || !strings.Contains(r.stdout, "exit code 1, want 0") {
		t.Errorf("wrong answer: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestValidateSuggestsAndPlanShowsTheTiers(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "task.yaml")
	os.WriteFile(p, []byte("task_id: v\ninitial_prompt: p\nsuccess_criteria:\n"+
		"  - {type: run_command, command: 'npm test'}\n"+
		"  - {type: run_command, command: 'node -e 1', sandbox: container, image: 'ceval.local/node:20'}\n"+
		"  - {type: file_exists, path: a}\n"), 0o644)
	// one check, one message: the warning names what the sandbox lacks and the fix
	r := ceval(t, "validate", p)
	want := p + ":4:5: warning: success_criteria[0] (run_command) calls npm, which the WASM sandbox does not provide"
	if r.code != 0 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "add sandbox: container") ||
		strings.Count(r.stdout+r.stderr, "npm") != 2 || strings.Contains(r.stderr, "node") {
		t.Errorf("validate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	exp := filepath.Join(dir, "exp.yaml")
	os.WriteFile(exp, []byte("experiment_id: e\ntasks: [task.yaml]\nvariants: [{variant_id: a, agent: {type: command, command: [\"true\"]}}, {variant_id: b, agent: {type: command, command: [\"true\"]}}]\n"), 0o644)
	if r := ceval(t, "validate", exp); r.code != 0 || strings.Count(r.stderr, "success_criteria[0] (run_command) calls npm") != 1 {
		t.Errorf("validate experiment: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = ceval(t, "plan", exp)
	if r.code != 0 || !strings.Contains(r.stdout, "static 1, wasm 1, container 1 (ceval.local/node:20)") {
		t.Errorf("plan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// regrade grades container-tier criteria again in verifier containers, over the saved
// snapshots, with the current criteria.
func TestRegradeRunsContainerCriteriaInAVerifier(t *testing.T) {
	_, _ = ctrtest.Connect(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "task.yaml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	doc := "task_id: a\ninitial_prompt: p\nsuccess_criteria:\n  - {type: run_command, sandbox: container, command: 'echo checking answer \"<$(cat answer.txt)>\"; test \"$(cat answer.txt)\" = 41', memory_mb: 128, pids: 32}\n"
	os.WriteFile(p, []byte(doc), 0o644)
	exp := filepath.Join(dir, "exp.yaml")
	os.WriteFile(exp, []byte("experiment_id: v\ntasks: [a/task.yaml]\ndefaults:\n  sandbox: {limits: {timeout: 30s, memory_mb: 128, pids: 64, disk_mb: 16}}\n"+
		"variants:\n  - variant_id: x\n    agent: {type: command, command: [/bin/sh, -c, \"echo 41 > answer.txt\"]}\n"), 0o644)
	runs := t.TempDir()
	if r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, exp); r.code != 0 {
		t.Fatalf("run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	// The verifier's output is saved in the run directory and shown on the run's page.
	expDir := onlyDir(t, runs)
	runDir := filepath.Join(expDir, "x", "a", "1")
	out, err := os.ReadFile(filepath.Join(runDir, "verifier", "criterion-1.stdout.log"))
	if err != nil || string(out) != "checking answer <41>\n" {
		t.Errorf("saved verifier stdout %q, %v", out, err)
	}
	page, _ := os.ReadFile(filepath.Join(runDir, "transcript.html"))
	if !strings.Contains(string(page), `href="verifier/criterion-1.stdout.log"`) || !strings.Contains(string(page), "checking answer &lt;41&gt;") {
		t.Errorf("the run's page does not show the verifier's output:\n%s", page)
	}
	os.WriteFile(p, []byte(strings.Replace(doc, "= 41", "= 42", 1)), 0o644)
	r := ceval(t, "regrade", "--namespace", ctrtest.Namespace, expDir)
	if !strings.Contains(r.stdout, "SUCCESS -> FAILURE") {
		t.Errorf("regrade: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	res, _ := os.ReadFile(filepath.Join(runDir, "result.json"))
	if !strings.Contains(string(res), `stdout ends \"checking answer \u003c41\u003e\"`) || !strings.Contains(string(res), `"output_logs": [`) {
		t.Errorf("the regraded criterion's details lack its output's tail:\n%s", res)
	}
}

// verifier_network is the user's: with host in ceval's config every verifier container is
// on the host's network (a test.sh that installs tools), without it none is; either way
// result.json says how the verifier ran. A task cannot set it.
func TestVerifierNetworkIsTheUsersChoiceAndRecorded(t *testing.T) {
	_, _ = ctrtest.Connect(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "task.yaml")
	// More than the loopback interface: the host's network.
	os.WriteFile(p, []byte("task_id: vnet\ninitial_prompt: p\nagent: {type: command, command: [\"true\"]}\n"+
		"sandbox: {limits: {timeout: 30s, memory_mb: 128, pids: 64, disk_mb: 16}}\nsuccess_criteria:\n"+
		"  - {type: run_command, sandbox: container, command: 'test $(ls /sys/class/net | wc -l) -gt 1', memory_mb: 128, pids: 32}\n"), 0o644)
	for _, c := range []struct {
		config, network string
		code            int
	}{{"verifier_network: host\n", "host", 0}, {"", "none", 1}} {
		cfg := filepath.Join(dir, "config.yaml")
		os.WriteFile(cfg, []byte(c.config), 0o644)
		runs := t.TempDir()
		r := ceval(t, "--config", cfg, "run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, p)
		if r.code != c.code {
			t.Errorf("verifier_network %q: exit %d, want %d\n%s%s", c.network, r.code, c.code, r.stdout, r.stderr)
		}
		res, _ := filepath.Glob(filepath.Join(runs, "*", "default", "vnet", "1", "result.json"))
		if len(res) != 1 {
			t.Fatalf("result.json: %v", res)
		}
		b, _ := os.ReadFile(res[0])
		if want := `"verifier": {
    "user": "root in its own user namespace",
    "network": "` + c.network + `"
  }`; !strings.Contains(string(b), want) {
			t.Errorf("result.json lacks %s:\n%s", want, b)
		}
	}
	cfg := filepath.Join(dir, "bad.yaml")
	os.WriteFile(cfg, []byte("verifier_network: bridge\n"), 0o644)
	if r := ceval(t, "--config", cfg, "run", p); r.code != 2 || !strings.Contains(r.stderr, `verifier_network "bridge": want none (the default) or host`) {
		t.Errorf("a bad verifier_network: exit %d: %s", r.code, r.stderr)
	}
}

// rootOverlayMounts lists the mount points of verifier root overlays (launcher.RootOverlay).
func rootOverlayMounts(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 5 && strings.Contains(f[4], "/"+launcher.RootOverlayPrefix) {
			out = append(out, f[4])
		}
	}
	return out
}

// ceval killed by SIGKILL while a verifier runs leaves its root overlay mounted (the image's
// idmapped layers, the capped tmpfs, the overlay); ceval gc unmounts them with the dead
// container and removes their directory, and the dead ceval's temporary directories (the
// grade's snapshot, the verifier's): they were left in /tmp before.
//
// Killed as soon as the overlay is mounted, ceval usually has not created the container yet:
// no container names the overlay, gc finds it by its dead owner's tag (it was left mounted
// before, and under load the one-second case met that too).
func TestGCAfterKill9UnmountsTheVerifiersRootOverlay(t *testing.T) {
	for _, wait := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprintf("killed %v after the mount", wait), func(t *testing.T) { gcAfterKill9(t, wait) })
	}
}

func gcAfterKill9(t *testing.T, wait time.Duration) {
	c, ctx := ctrtest.Connect(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // ceval's and gc's, exactly
	dir := t.TempDir()
	p := filepath.Join(dir, "task.yaml")
	os.WriteFile(p, []byte("task_id: sleeper\ninitial_prompt: p\nsuccess_criteria:\n"+
		"  - {type: run_command, sandbox: container, command: 'sleep 600', timeout: 10m, memory_mb: 128, pids: 32}\n"), 0o644)
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	cmd := exec.Command(cevalBin, "grade", "--namespace", ctrtest.Namespace, p, "--workspace", ws)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
		ceval(t, "gc", "--namespace", ctrtest.Namespace)
	})
	// Its overlays only: other tests (and other cevals on this host) mount theirs meanwhile.
	// The directory's name carries its ceval's owner tag (tempdir.Owner: p<PID>s<START>).
	tag := fmt.Sprintf("/%sp%ds", launcher.RootOverlayPrefix, cmd.Process.Pid)
	ours := func() (m []string) {
		for _, p := range rootOverlayMounts(t) {
			if strings.Contains(p, tag) {
				m = append(m, p)
			}
		}
		return m
	}
	for i := 0; i < 600 && len(ours()) == 0; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if len(ours()) == 0 {
		t.Fatal("no root overlay was mounted within a minute")
	}
	// Killed at once or once its container runs, gc finds the overlay: through the dead
	// container that names it, or by its dead owner's tag when no container exists yet.
	time.Sleep(wait)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed = true
	if len(ours()) == 0 {
		t.Fatal("kill -9 left no root overlay: the test does not test gc")
	}
	r := ceval(t, "gc", "--namespace", ctrtest.Namespace)
	// Not "root overlay of a" in its report: any ceval gc on this host (another package's
	// test, another checkout's) sweeps a dead ceval's overlay too, and did (3 runs in 8
	// beside another test process); what is left is checked below.
	if r.code != 0 {
		t.Errorf("gc: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if left := ours(); len(left) > 0 {
		t.Errorf("mounts left after gc: %v", left)
	}
	var inTmp []string
	for _, e := range entries(tmp) {
		if strings.HasPrefix(e, "ceval-") {
			inTmp = append(inTmp, e)
		}
	}
	if len(inTmp) > 0 {
		t.Errorf("left in TMPDIR after gc: %v", inTmp)
	}
	ctrs, _ := c.Containers(ctx)
	for _, ctr := range ctrs {
		if strings.HasPrefix(ctr.ID(), "ceval-verify") {
			t.Errorf("container %s left after gc", ctr.ID())
		}
	}
	if tasks, err := c.TaskService().List(ctx, &apitasks.ListTasksRequest{}); err != nil || len(tasks.Tasks) > 0 {
		t.Errorf("tasks left after gc: %v %v", tasks, err)
	}
	// A shim ceval started a task create with, killed mid-call, runs on (containerd 1.6 ends
	// it some seconds later, unless it stops first: CI's stopped daemon kept one running); gc
	// kills it at once. What may follow is containerd's own cleanup of it ("... delete"),
	// which ends by itself.
	var left []string
	for _, s := range shimsIn(ctrtest.Namespace) {
		if !strings.HasSuffix(s, " delete ") {
			left = append(left, s)
		}
	}
	if len(left) > 0 {
		t.Errorf("shims left after gc: %v", left)
	}
	for end := time.Now().Add(time.Minute); len(shimsIn(ctrtest.Namespace)) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Errorf("containerd's cleanup of a shim still runs a minute after gc: %v", shimsIn(ctrtest.Namespace))
			break
		}
	}
}

// shimsIn lists the command lines of the containerd shims running for namespace ns.
func shimsIn(ns string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte("containerd-shim")) || !bytes.Contains(b, []byte("\x00-namespace\x00"+ns+"\x00")) {
			continue
		}
		out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return out
}
