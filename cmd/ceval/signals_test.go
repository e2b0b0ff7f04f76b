package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	apitasks "github.com/containerd/containerd/api/services/tasks/v1"
	apitask "github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/internal/ctrtest"
)

// proc is one process, told apart from a later one with its PID by its start time.
type proc struct {
	pid   int
	start string
	name  string
}

// readProc reads /proc/PID/stat: the parent, the start time and the name; ok is false once
// the process has exited (a zombie counts as exited: nothing of it runs).
func readProc(pid int) (ppid int, p proc, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, proc{}, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return 0, proc{}, false
	}
	f := strings.Fields(s[end+1:]) // f[0] state, f[1] ppid, f[19] starttime
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0, proc{}, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, proc{pid: pid, start: f[19], name: s[open+1 : end]}, true
}

// descendants lists every living process below root, by walking /proc's parent links.
func descendants(root int) []proc {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, p, ok := readProc(pid); ok {
			children[ppid] = append(children[ppid], p)
		}
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
		queue = queue[1:]
	}
	return out
}

// stillRunning is what of ps is alive: the same PID with the same start time.
func stillRunning(ps []proc) []string {
	var left []string
	seen := map[[2]string]bool{} // a process that exec'd is seen under two names
	for _, p := range ps {
		key := [2]string{strconv.Itoa(p.pid), p.start}
		if seen[key] {
			continue
		}
		seen[key] = true
		if _, q, ok := readProc(p.pid); ok && q.start == p.start {
			left = append(left, fmt.Sprintf("%s (pid %d)", p.name, p.pid))
		}
	}
	return left
}

// leases lists the containerd leases of the test namespace.
func leases(t *testing.T, ctx context.Context, c *client.Client) []string {
	t.Helper()
	ls, err := c.LeasesService().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range ls {
		ids = append(ids, l.ID)
	}
	sort.Strings(ids)
	return ids
}

// entries lists what is below dir, as paths relative to it.
func entries(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// signalCase is one long-running command signalled half-way.
type signalCase struct {
	args  []string
	ready func(ctx context.Context, c *client.Client, tmp string, below []proc) bool // the point to signal at
	sig   syscall.Signal
	code  int
}

// interrupt starts the built binary with a TMPDIR and XDG_CACHE_HOME of its own, signals it
// once ready says so, and checks that it exits with the code wanted and leaves nothing: no
// process it started (by PID and start time), nothing in its TMPDIR or below its cache
// besides finished entries, no containerd container, task, active snapshot or lease.
func interrupt(t *testing.T, in signalCase) string {
	t.Helper()
	c, ctx := ctrtest.Connect(t)
	before := leases(t, ctx, c)
	tmp, cache := t.TempDir(), t.TempDir()
	cmd := exec.Command(cevalBin, append(in.args[:1:1], append([]string{"--namespace", ctrtest.Namespace}, in.args[1:]...)...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "XDG_CACHE_HOME="+cache)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
	})
	var seen []proc
	for end := time.Now().Add(3 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		select {
		case <-done:
			t.Fatalf("ceval ended (exit %d) before the point to signal it at:\n%s", cmd.ProcessState.ExitCode(), out.String())
		default:
		}
		below := descendants(cmd.Process.Pid)
		seen = append(seen, below...)
		if in.ready(ctx, c, tmp, below) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("never ready to signal:\n%s", out.String())
		}
	}
	seen = append(seen, descendants(cmd.Process.Pid)...)
	if err := cmd.Process.Signal(in.sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Fatalf("ceval still runs 90 s after %v:\n%s", in.sig, out.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != in.code {
		t.Errorf("exit %d after %v, want %d:\n%s", code, in.sig, in.code, out.String())
	}
	if left := stillRunning(seen); len(left) > 0 {
		t.Errorf("still running after ceval exited: %v", left)
	}
	if left := entries(tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
	for _, e := range entries(cache) {
		if strings.HasPrefix(filepath.Base(e), ".") {
			t.Errorf("a build's working entry left in the cache: %s", e)
		}
	}
	if err := ctrtest.Leftovers(ctx, c); err != nil {
		t.Errorf("left in containerd: %v", err)
	}
	if after := leases(t, ctx, c); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("leases before %v, after %v", before, after)
	}
	return out.String()
}

// running reports whether a process named name is among below.
func running(name string) func(context.Context, *client.Client, string, []proc) bool {
	return func(_ context.Context, _ *client.Client, _ string, below []proc) bool {
		for _, p := range below {
			if p.name == name {
				return true
			}
		}
		return false
	}
}

// containerRunning reports whether the namespace holds a container whose task runs.
func containerRunning(ctx context.Context, c *client.Client, _ string, _ []proc) bool {
	tasks, err := c.TaskService().List(ctx, nil)
	if err != nil {
		return false
	}
	for _, tk := range tasks.Tasks {
		if tk.Status == apitask.Status_RUNNING {
			return true
		}
	}
	return false
}

// containerRuns reports whether a running task of the namespace has a process named comm.
func containerRuns(ctx context.Context, c *client.Client, comm string) bool {
	tasks, err := c.TaskService().List(ctx, nil)
	if err != nil {
		return false
	}
	for _, tk := range tasks.Tasks {
		if tk.Status != apitask.Status_RUNNING {
			continue
		}
		pids, err := c.TaskService().ListPids(ctx, &apitasks.ListPidsRequest{ContainerID: tk.ID})
		if err != nil {
			continue
		}
		for _, p := range pids.Processes {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.Pid)); err == nil && strings.TrimSpace(string(b)) == comm {
				return true
			}
		}
	}
	return false
}

func buildahDockerfile(t *testing.T, ctx context.Context, c *client.Client) string {
	t.Helper()
	needBuildahCLI(t)
	if r := ceval(t, "images", "build-default", "--namespace", ctrtest.Namespace); r.code != 0 {
		t.Fatalf("build-default: exit %d\n%s", r.code, r.stderr)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, "ceval.local/default:latest") })
	p := filepath.Join(t.TempDir(), "Dockerfile")
	os.WriteFile(p, []byte("FROM ceval.local/default:latest\nUSER root\nRUN sleep 300\n"), 0o644)
	return p
}

func needBuildahCLI(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("buildah"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and buildah is missing: apt-get install buildah (make setup)")
		}
		t.Skip("buildah missing: apt-get install buildah")
	}
}

// The bug: SIGTERM to `images build -f` left buildah, its RUN step and a 254 MB
// /tmp/ceval-buildah-* behind. Signalled while the RUN step runs, nothing is left.
func TestImagesBuildDockerfileInterruptedLeavesNoBuildahNorItsDirectory(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			c, ctx := ctrtest.Connect(t)
			df := buildahDockerfile(t, ctx, c)
			interrupt(t, signalCase{
				args:  []string{"images", "build", "ceval.local/test-sig-df:1", "-f", df},
				ready: running("sleep"), sig: sig, code: 128 + int(sig),
			})
			if _, err := c.ImageService().Get(ctx, "ceval.local/test-sig-df:1"); err == nil {
				t.Error("an interrupted build left an image")
			}
		})
	}
}

// mmdebstrap, signalled as soon as it has made its directory, removes it (and unmounts
// what it mounted there): SIGTERM first, not SIGKILL.
func TestImagesBuildPackagesInterruptedLeavesNoMmdebstrapNorItsDirectory(t *testing.T) {
	needMmdebstrap(t)
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, "ceval.local/test-sig-pk:1") })
	interrupt(t, signalCase{
		args: []string{"images", "build", "ceval.local/test-sig-pk:1", "--packages", "hello"},
		ready: func(_ context.Context, _ *client.Client, tmp string, below []proc) bool {
			d, _ := filepath.Glob(filepath.Join(tmp, "*mmdebstrap*"))
			return len(d) > 0 && running("mmdebstrap")(nil, nil, "", below)
		},
		sig: syscall.SIGTERM, code: 143,
	})
}

func TestSandboxExecInterruptedLeavesNoContainer(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			c, ctx := ctrtest.Connect(t)
			t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, "ceval.local/default:latest") })
			interrupt(t, signalCase{
				args:  []string{"sandbox", "exec", "--timeout", "5m", "--", "sleep", "300"},
				ready: containerRunning, sig: sig, code: 128 + int(sig),
			})
		})
	}
}

// run keeps its documented exit 3 (its runs are not graded) on SIGTERM as on Ctrl-C.
func TestRunInterruptedBySIGTERMExits3AndLeavesNothing(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, "ceval.local/default:latest") })
	p := filepath.Join(t.TempDir(), "task.yaml")
	os.WriteFile(p, []byte("task_id: sigterm\ninitial_prompt: p\nagent: {type: command, command: [sleep, \"1000\"]}\nsuccess_criteria: [{type: file_exists, path: x}]\n"), 0o644)
	interrupt(t, signalCase{
		args:  []string{"run", "--runs-dir", t.TempDir(), p},
		ready: containerRunning, sig: syscall.SIGTERM, code: 3,
	})
}

// grade, signalled while a criterion runs in its verifier container.
func TestGradeInterruptedInAVerifierLeavesNoContainer(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "task.yaml")
	os.WriteFile(p, []byte("task_id: slowgrade\ninitial_prompt: p\nsuccess_criteria:\n  - {type: run_command, sandbox: container, command: 'sleep 300', timeout: 10m}\n"), 0o644)
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, "ceval.local/default:latest") })
	interrupt(t, signalCase{
		args:  []string{"grade", p, "--workspace", t.TempDir()},
		ready: containerRunning, sig: syscall.SIGTERM, code: 143,
	})
}

// selftest, signalled while an attack runs in its container.
func TestSelftestInterruptedLeavesNothing(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, "ceval.local/default:latest") })
	interrupt(t, signalCase{
		args:  []string{"selftest"},
		ready: containerRunning, sig: syscall.SIGINT, code: 130,
	})
}

// audit, signalled while the task's oracle runs.
func TestAuditInterruptedLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "solve.sh"), []byte("#!/bin/sh\nsleep 300\n"), 0o755)
	p := filepath.Join(dir, "task.yaml")
	os.WriteFile(p, []byte("task_id: sloworacle\ninitial_prompt: p\nsolution: {script: solve.sh}\nsuccess_criteria: [{type: file_exists, path: x}]\n"), 0o644)
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, "ceval.local/default:latest") })
	interrupt(t, signalCase{
		args:  []string{"audit", "--runs-dir", t.TempDir(), p},
		ready: containerRunning, sig: syscall.SIGTERM, code: 143,
	})
}

// An experiment (two variants, run two at a time), signalled while its runs' containers
// run: exit 3 as run, nothing left.
func TestExperimentInterruptedExits3AndLeavesNothing(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, "ceval.local/default:latest") })
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "task.yaml"), []byte("task_id: sleeper\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: x}]\n"), 0o644)
	exp := filepath.Join(dir, "exp.yaml")
	os.WriteFile(exp, []byte("experiment_id: sig\ntasks: [task.yaml]\nvariants:\n"+
		"  - {variant_id: a, agent: {type: command, command: [sleep, \"1000\"]}}\n"+
		"  - {variant_id: b, agent: {type: command, command: [sleep, \"1000\"]}}\n"), 0o644)
	interrupt(t, signalCase{
		args:  []string{"run", "--runs-dir", t.TempDir(), "-j", "2", exp},
		ready: containerRunning, sig: syscall.SIGTERM, code: 3,
	})
}

// images pull, signalled half-way through a layer: no pull lease, no image, nothing in
// TMPDIR (TestPullKilledMidwayLeavesNothingAfterGC is the SIGKILL, which needs gc).
func TestImagesPullInterruptedLeavesNothing(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			c, ctx := ctrtest.Connect(t)
			reg := newSlowRegistry(t)
			srv := httptest.NewServer(reg)
			t.Cleanup(srv.Close)
			ref := strings.TrimPrefix(srv.URL, "http://") + "/t/slow:v1"
			t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, ref) })
			interrupt(t, signalCase{
				args: []string{"images", "pull", ref, "--hosts-dir", t.TempDir(), "--docker-config", filepath.Join(t.TempDir(), "none.json")},
				ready: func(context.Context, *client.Client, string, []proc) bool {
					select {
					case <-reg.started:
						return true
					default:
						return false
					}
				},
				sig: sig, code: 128 + int(sig),
			})
			if _, err := c.ImageService().Get(ctx, ref); err == nil {
				t.Error("an interrupted pull left an image")
			}
			if st, _ := c.ContentStore().ListStatuses(ctx); len(st) > 0 {
				t.Errorf("an interrupted pull left %d partial downloads", len(st))
			}
		})
	}
}

// A second signal exits at once (containers are gc's), but the temporary directories
// ceval made go first, unless something is still mounted in them; gc then unmounts and
// removes what is left. Without tempdir.RemoveLive the grade's snapshot directory stayed;
// without gc's sweep the verifier's directory did.
func TestGradeSignalledTwiceLeavesNothingAfterGC(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "task.yaml")
	// The command ignores SIGTERM: the first signal's cleanup waits out the verifier's grace
	// (2 s) before its SIGKILL, while the second arrives.
	os.WriteFile(p, []byte("task_id: slowgrade\ninitial_prompt: p\nsuccess_criteria:\n  - {type: run_command, sandbox: container, command: 'trap \"\" TERM; sleep 300', timeout: 10m}\n"), 0o644)
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "f"), []byte("x"), 0o644)
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, "ceval.local/default:latest") })
	tmp := t.TempDir()
	env := append(os.Environ(), "TMPDIR="+tmp)
	cmd := exec.Command(cevalBin, "grade", "--namespace", ctrtest.Namespace, p, "--workspace", ws)
	cmd.Env = env
	logf, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	out := fileString(filepath.Join(dir, "out"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	ended := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	gc := func() cliResult {
		g := exec.Command(cevalBin, "gc", "--namespace", ctrtest.Namespace)
		g.Env = env
		var o, e bytes.Buffer
		g.Stdout, g.Stderr = &o, &e
		g.Run()
		return cliResult{g.ProcessState.ExitCode(), o.String(), e.String()}
	}
	t.Cleanup(func() {
		if !ended() {
			cmd.Process.Kill()
			<-done
		}
		gc()
	})
	var seen []proc
	for end := time.Now().Add(3 * time.Minute); !containerRunning(ctx, c, tmp, nil); time.Sleep(20 * time.Millisecond) {
		seen = append(seen, descendants(cmd.Process.Pid)...)
		if ended() || time.Now().After(end) {
			t.Fatalf("no verifier container ran:\n%s", out.String())
		}
	}
	if len(entries(tmp)) == 0 {
		t.Fatal("grade made nothing in TMPDIR: the test tests nothing")
	}
	// The shell's trap is set once its sleep runs (a fixed wait missed it under load: the
	// first SIGTERM then ended the shell at once, and ceval exited before the second).
	for end := time.Now().Add(3 * time.Minute); !containerRuns(ctx, c, "sleep"); time.Sleep(20 * time.Millisecond) {
		if ended() || time.Now().After(end) {
			t.Fatalf("the verifier's command never reached its sleep:\n%s", out.String())
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	// The second once ceval said it received the first: Go's runtime merges a signal that
	// arrives before its receiver took the one before (the kernel's pending set was clear
	// by then: waiting for that lost the second about 1 run in 11 under load).
	for end := time.Now().Add(3 * time.Minute); !strings.Contains(out.String(), "SIGTERM: stopping"); time.Sleep(5 * time.Millisecond) {
		if ended() || time.Now().After(end) {
			t.Fatalf("ceval never acknowledged the first SIGTERM:\n%s", out.String())
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	<-done
	if code := cmd.ProcessState.ExitCode(); code != 143 || !strings.Contains(out.String(), "SIGTERM again") {
		t.Fatalf("exit %d (%v), want 143 by the second signal:\n%s", code, cmd.ProcessState, out.String())
	}
	for _, e := range entries(tmp) {
		if strings.HasPrefix(e, "ceval-grade-") {
			t.Errorf("the second signal left %s", e)
		}
	}
	if r := gc(); r.code != 0 {
		t.Errorf("gc: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if left := entries(tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR after gc: %v", left)
	}
	if left := stillRunning(seen); len(left) > 0 {
		t.Errorf("still running: %v", left)
	}
	if err := ctrtest.Leftovers(ctx, c); err != nil {
		t.Errorf("left in containerd after gc: %v", err)
	}
}

// fileString reads a file when printed: a command's output that only it writes.
type fileString string

func (f fileString) String() string {
	b, _ := os.ReadFile(string(f))
	return string(b)
}

// privateTMPDIR gives the ceval processes this test starts a TMPDIR of their own, so that
// what they leave in it is exactly theirs (TMPDIR is inherited: no t.Parallel).
func privateTMPDIR(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	return tmp
}

// cevalTempLeft lists the temporary directories (ceval-*) ceval left in tmp, and what is
// below them.
func cevalTempLeft(tmp string) []string {
	var out []string
	for _, e := range entries(tmp) {
		if strings.HasPrefix(e, "ceval-") {
			out = append(out, e)
		}
	}
	return out
}
