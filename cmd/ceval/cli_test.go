package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/launcher"
)

var cevalBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ceval-cli-test-")
	if err != nil {
		panic(err)
	}
	cevalBin = filepath.Join(dir, "ceval")
	if b := os.Getenv("CEVAL_TEST_BIN"); b != "" {
		// A binary built beforehand: .ci/run's rootless suite runs as a user without Go.
		cevalBin = b
	} else if out, err := exec.Command("go", "build", "-o", cevalBin, ".").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type cliResult struct {
	code           int
	stdout, stderr string
}

func ceval(t *testing.T, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(cevalBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cliResult{cmd.ProcessState.ExitCode(), out.String(), errb.String()}
}

func TestValidateReportsEveryProblemWithPositionAndExits2(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("task_id: t\ninitial_prompt: p\ncolour: red\nsuccess_criteria:\n  - {type: file_matches_regex, path: a, pattern: \"(\"}\n"), 0o644)
	r := ceval(t, "validate", "../../examples/hello/task.yaml", bad)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2", r.code)
	}
	for _, want := range []string{bad + `:3:1: unknown field "colour"`, bad + ":5:50: success_criteria[0] (file_matches_regex).pattern"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, "hello/task.yaml: ok") {
		t.Errorf("valid file not reported ok: %q", r.stdout)
	}
	if r := ceval(t, "validate", "../../examples/hello/task.yaml"); r.code != 0 {
		t.Errorf("valid task: exit %d: %s", r.code, r.stderr)
	}
}

func TestGradeExitCodesAndJSON(t *testing.T) {
	r := ceval(t, "grade", "../../examples/hello/task.yaml", "--workspace", "../../examples/hello/solved", "--json")
	if r.code != 0 {
		t.Fatalf("solved: exit %d: %s", r.code, r.stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("--json is not one JSON object: %v\n%s", err, r.stdout)
	}
	if res["status"] != "SUCCESS" || res["task_id"] != "hello" || res["score"] != 1.0 {
		t.Errorf("result = %v", res)
	}
	crit := res["criteria"].([]any)[0].(map[string]any)
	for _, k := range []string{"type", "description", "status", "score", "passed", "weight", "gating", "details"} {
		if _, ok := crit[k]; !ok {
			t.Errorf("criterion lacks %q", k)
		}
	}
	r = ceval(t, "grade", "../../examples/hello/task.yaml", "--workspace", t.TempDir())
	if r.code != 1 || !strings.Contains(r.stdout, "hello: FAILURE, score 0.00") {
		t.Errorf("empty workspace: exit %d\n%s", r.code, r.stdout)
	}
	if strings.Contains(r.stderr, "ceval:") {
		t.Errorf("a FAILURE is not an error message: stderr %q", r.stderr)
	}
	if r := ceval(t, "grade", "../../examples/hello/task.yaml"); r.code != 2 {
		t.Errorf("missing --workspace: exit %d", r.code)
	}
}

func TestRunWithContainerdDownSaysSoInOneLine(t *testing.T) {
	r := ceval(t, "run", "--containerd-address", "/nonexistent/containerd.sock", "--runs-dir", t.TempDir(), "../../examples/hello/task.yaml")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3", r.code)
	}
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "containerd") {
		t.Errorf("want one line about containerd, got %q", r.stderr)
	}
}

func TestRunWithMissingImageSaysHowToGetIt(t *testing.T) {
	_, _ = ctrtest.Connect(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "task.yaml")
	os.WriteFile(p, []byte("task_id: noimg\ninitial_prompt: p\nagent: {type: command, command: [true]}\nsandbox: {image: \"ceval.local/missing:1\"}\nsuccess_criteria: [{type: file_exists, path: x}]\n"), 0o644)
	r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", t.TempDir(), p)
	if r.code != 3 || !strings.Contains(r.stderr, "image ceval.local/missing:1 not found") || !strings.Contains(r.stderr, "ceval images") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// SIGINT mid-run: the agent is stopped, nothing is left in containerd, and the run
// directory says the run was interrupted.
func TestRunInterruptedBySIGINTLeavesNothing(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	tmp := privateTMPDIR(t)
	cmd, runs := startSleeper(t, ctx, c, "sigint")
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
	results, _ := filepath.Glob(filepath.Join(runs, "*", "default", "sigint", "1", "result.json"))
	if len(results) != 1 {
		t.Fatalf("no result.json in %s", runs)
	}
	data, _ := os.ReadFile(results[0])
	if !strings.Contains(string(data), `"interrupted": true`) {
		t.Errorf("result.json does not say interrupted:\n%s", data)
	}
	events, _ := os.ReadFile(filepath.Join(filepath.Dir(results[0]), "events.jsonl"))
	if !strings.Contains(string(events), `"event":"interrupted"`) {
		t.Errorf("events.jsonl does not record the interrupt")
	}
	if err := ctrtest.Leftovers(ctx, c); err != nil {
		t.Errorf("left behind: %v", err)
	}
}

func TestSandboxExecIsTheAgentSandbox(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	r := ceval(t, "sandbox", "exec", "--namespace", ctrtest.Namespace, "--timeout", "30s", "--",
		"sh", "-c", "id -u; id -g; grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status; ls /workspace | wc -l; touch /x 2>/dev/null || echo rofs; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; exit 7")
	if r.code != 7 {
		t.Fatalf("exit %d, want the command's 7; stderr %s", r.code, r.stderr)
	}
	want := "2000\n2000\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n0\nrofs\nlo\n"
	if r.stdout != want {
		t.Errorf("stdout is not exactly the command's:\n%q\nwant\n%q", r.stdout, want)
	}
}

func TestDoctorPassesHereAndFailsWithoutContainerd(t *testing.T) {
	_, _ = ctrtest.Connect(t)
	r := ceval(t, "doctor", "--containerd-address", launcher.AddressFromEnv())
	if r.code != 0 || os.Geteuid() == 0 && !strings.Contains(r.stdout, "ok    containerd dirs        state ") {
		t.Errorf("doctor: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = ceval(t, "doctor", "--containerd-address", "/nonexistent.sock")
	if r.code == 0 || !strings.Contains(r.stdout, "FAIL  containerd") {
		t.Errorf("doctor without containerd: exit %d\n%s", r.code, r.stdout)
	}
}

func TestConfigFileIsStrictAndOptional(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("allow_envs: [X]\n"), 0o600)
	r := ceval(t, "run", "--config", bad, "../../examples/hello/task.yaml")
	if r.code != 2 || !strings.Contains(r.stderr, "allow_envs") {
		t.Errorf("unknown config field: exit %d %q", r.code, r.stderr)
	}
	r = ceval(t, "run", "--config", filepath.Join(dir, "missing.yaml"), "../../examples/hello/task.yaml")
	if r.code != 2 || !strings.Contains(r.stderr, "config file") {
		t.Errorf("named config file missing: exit %d %q", r.code, r.stderr)
	}
}

// dockerSaveArchive builds a `docker save`-style archive of a one-layer busybox image with
// no isolation label.
func dockerSaveArchive(t *testing.T, tag string) string {
	t.Helper()
	busybox, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Skip("no /bin/busybox")
	}
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	lw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "bin/", Mode: 0o755})
	lw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(busybox))})
	lw.Write(busybox)
	lw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/sh", Linkname: "busybox", Mode: 0o777})
	lw.Close()
	diffID := sha256.Sum256(layer.Bytes())
	config, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Cmd": []string{"/bin/sh"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diffID[:])}},
	})
	manifest, _ := json.Marshal([]map[string]any{{"Config": "config.json", "RepoTags": []string{tag}, "Layers": []string{"layer/layer.tar"}}})
	p := filepath.Join(t.TempDir(), "image.tar")
	f, _ := os.Create(p)
	w := tar.NewWriter(f)
	for _, e := range []struct {
		name string
		data []byte
	}{{"manifest.json", manifest}, {"config.json", config}, {"layer/layer.tar", layer.Bytes()}} {
		w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: 0o644, Size: int64(len(e.data))})
		w.Write(e.data)
	}
	w.Close()
	f.Close()
	return p
}

// An image without the isolation label is refused (fail closed) with the command that fixes
// it, and nothing is left behind.
func TestRunRefusesUnlabeledImageWithTheFix(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	const name = "docker.io/library/unlabeled:test"
	t.Cleanup(func() {
		imgs, _ := c.ImageService().List(ctx)
		for _, img := range imgs {
			if strings.HasPrefix(img.Name, "docker.io/library/unlabeled") { // the tag and the run's pin
				ctrtest.RemoveImage(ctx, c, img.Name)
			}
		}
	})
	if r := ceval(t, "images", "import", "--namespace", ctrtest.Namespace, dockerSaveArchive(t, "unlabeled:test")); r.code != 0 {
		t.Fatalf("import: exit %d %s", r.code, r.stderr)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "task.yaml")
	os.WriteFile(p, []byte("task_id: unlabeled\ninitial_prompt: p\nagent: {type: command, command: [true]}\nsandbox: {image: \""+name+"\"}\nsuccess_criteria: [{type: file_exists, path: x}]\n"), 0o644)
	r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", t.TempDir(), p)
	if r.code != 3 || !strings.Contains(r.stderr, "lacks the label dev.ceval.agent-isolation") || !strings.Contains(r.stderr, "ceval images label "+name) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	r = ceval(t, "sandbox", "exec", "--namespace", ctrtest.Namespace, "--image", name, "--", "true")
	if r.code == 0 || !strings.Contains(r.stderr, "lacks the label") {
		t.Errorf("sandbox exec ran an unlabeled image: exit %d %q", r.code, r.stderr)
	}
}

// startSleeper starts `ceval run` of a task whose agent sleeps, in the test namespace, and
// returns once the agent has started, with the runs directory. ceval's stderr is read to its
// end meanwhile (through a pipe of ours, so Wait never races the reader).
// startSleeper starts `ceval run` (with extra flags, if any) on a task whose agent sleeps, and
// returns once the agent has started.
func startSleeper(t *testing.T, ctx context.Context, c *client.Client, taskID string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	return startSleeperTask(t, ctx, c, "task_id: "+taskID+"\ninitial_prompt: p\nagent: {type: command, command: [sleep, \"1000\"]}\nsuccess_criteria: [{type: file_exists, path: x}]\n", extra...)
}

// startSleeperTask is startSleeper of the task file doc.
func startSleeperTask(t *testing.T, ctx context.Context, c *client.Client, doc string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	p := filepath.Join(t.TempDir(), "task.yaml")
	os.WriteFile(p, []byte(doc), 0o644)
	runs := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "--namespace", ctrtest.Namespace, "--runs-dir", runs}, extra...)
	cmd := exec.Command(cevalBin, append(args, p)...)
	cmd.Stderr = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	started := make(chan struct{})
	go func() {
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "agent_started") {
				close(started)
				break
			}
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	select {
	case <-started:
	case <-time.After(3 * time.Minute): // the default image is imported first (each test removes it)
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the agent never started in 3 minutes")
	}
	return cmd, runs
}

// ceval run checks every task before anything starts: a second task whose simulated_user
// needs a judge the config does not have is refused before containerd is even reached
// (before, the first task ran and the second failed after it).
func TestRunRefusesEveryBadTaskBeforeAnyStarts(t *testing.T) {
	p, cfg := simulatedUserWithoutJudge(t)
	runs := t.TempDir()
	r := ceval(t, "run", "--config", cfg, "--containerd-address", "/nonexistent/containerd.sock", "--runs-dir", runs, "../../examples/hello/task.yaml", p)
	if r.code != 2 || !strings.Contains(r.stderr, "simulated_user") || strings.Contains(r.stderr, "containerd") {
		t.Errorf("exit %d, stderr %q; want 2 naming simulated_user before containerd is reached", r.code, r.stderr)
	}
	if left, _ := os.ReadDir(runs); len(left) != 0 {
		t.Errorf("the refused run wrote %v", left)
	}
}
