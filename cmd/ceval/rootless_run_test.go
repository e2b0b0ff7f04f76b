package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	ctrimages "github.com/containerd/containerd/v2/core/images"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// rootlessEnv is the environment of a ceval run by the rootless daemon's user, and whether
// root delegated a cgroup subtree to that user (the strict mode) or not (the rlimit mode).
// These tests run as that user (.ci/run runs them so, once in each mode); as root they skip,
// because root is not rootless. Without the daemon they fail under CI=true.
func rootlessEnv(t *testing.T) (env []string, delegated bool) {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("rootless tests run as the daemon's unprivileged user (.ci/run: scripts/containerd.sh rootless-start, then the tests as that user)")
	}
	addr := os.Getenv(launcher.RootlessAddressEnv)
	if addr == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and a rootless containerd is required: set %s (scripts/containerd.sh rootless-start USER DIR prints it)", launcher.RootlessAddressEnv)
		}
		t.Skipf("no rootless containerd: set %s", launcher.RootlessAddressEnv)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	name, _ := launcher.DelegatedCgroup(cgroupRoot, u.Username)
	return rootlessCevalEnv(addr, "CEVAL_NAMESPACE="+ctrtest.Namespace), name != ""
}

// rootlessCevalEnv is this process's environment for a ceval of the rootless user, every
// CEVAL_ variable replaced by the daemon's address and extra: the user's default cache and
// config paths, and nothing docs/rootless.md's quick start does not set (not CEVAL_ROOTLESS_ADDRESS).
func rootlessCevalEnv(addr string, extra ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CEVAL_") })
	return append(append(env, "CEVAL_CONTAINERD_ADDRESS="+addr), extra...)
}

// rootlessCeval runs the ceval binary with env; ceval itself enters the daemon's namespaces.
func rootlessCeval(t *testing.T, env []string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(cevalBin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cliResult{cmd.ProcessState.ExitCode(), out.String(), errb.String()}
}

// rootlessTask writes a task running script as its agent with the given limits and extra
// YAML, and returns its path.
func rootlessTask(t *testing.T, id, script, limits, extra string) string {
	t.Helper()
	dir := t.TempDir()
	doc := "task_id: " + id + "\ninitial_prompt: p\nagent:\n  type: command\n  command:\n    - /bin/sh\n    - -c\n    - |\n" +
		indent(script, "      ") + "sandbox:\n  network: none\n  limits: {" + limits + "}\n" + extra
	if !strings.Contains(extra, "success_criteria") {
		doc += "success_criteria:\n  - {type: file_exists, path: done, description: the agent got to its end}\n"
	}
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func indent(s, pre string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(pre + l + "\n")
	}
	return b.String()
}

// rootlessRun runs one task as the rootless user (allowing the rlimit mode) and returns its
// result (graded: SUCCESS or FAILURE) and run directory.
func rootlessRun(t *testing.T, env []string, taskPath string) (*record.Result, string) {
	t.Helper()
	runs := t.TempDir()
	r := rootlessCeval(t, env, "run", "--allow-rlimit-limits", "--runs-dir", runs, taskPath)
	if r.code != 0 && r.code != 1 {
		t.Fatalf("ceval run exit %d, want a graded run\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	m, _ := filepath.Glob(filepath.Join(runs, "*", "*", "*", "*", record.ResultFile))
	if len(m) != 1 {
		t.Fatalf("want one result.json under %s, found %v\n%s", runs, m, r.stderr)
	}
	data, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	var res record.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(m[0])
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("what the run left in %s:\n%s\nceval's stderr:\n%s", dir, describeRunDir(dir), r.stderr)
		}
	})
	return &res, dir
}

// describeRunDir is what a failed run left to explain itself: its result, the agent's output
// and the names in its workspace copy.
func describeRunDir(dir string) string {
	var b strings.Builder
	for _, f := range []string{record.ResultFile, "agent.stdout.log", "agent.stderr.log", "events.jsonl"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			data = []byte(err.Error())
		}
		b.WriteString("--- " + f + "\n" + string(data) + "\n")
	}
	b.WriteString("--- workspace:")
	_ = filepath.WalkDir(filepath.Join(dir, record.WorkspaceDir), func(p string, d os.DirEntry, err error) error {
		b.WriteString(" " + p)
		return nil
	})
	return b.String()
}

// wantLimitsBy checks that the attestation names the mode in force for every limit.
func wantLimitsBy(t *testing.T, res *record.Result, delegated bool) {
	t.Helper()
	want := policy.RootfulLimits
	if !delegated {
		want = policy.LimitsEnforcedBy{Pids: policy.EnforcedByRlimitNproc, Memory: policy.EnforcedByRlimitAS, CPU: policy.NotEnforced, Disk: policy.EnforcedByTmpfs}
	}
	if res.Isolation == nil || res.Isolation.LimitsEnforcedBy != want {
		t.Fatalf("limits_enforced_by %+v, want %+v", res.Isolation, want)
	}
}

func TestRootlessRunOfTheHelloExampleSucceedsWithItsIsolationAttested(t *testing.T) {
	env, delegated := rootlessEnv(t)
	res, _ := rootlessRun(t, env, "../../examples/hello/task.yaml")
	if res.Status != "SUCCESS" || res.Score != 1 {
		t.Fatalf("status %s score %v: %s", res.Status, res.Score, res.Error)
	}
	a := res.Isolation
	if a.UID != 2000 || a.GID != 2000 || a.CapEff != "0000000000000000" || a.CapBnd != "0000000000000000" || a.CapAmb != "0000000000000000" ||
		a.NoNewPrivs != 1 || a.Seccomp != 2 || len(a.Interfaces) != 1 || a.Interfaces[0] != "lo" {
		t.Fatalf("attestation %+v", a)
	}
	wantHostIDsInSubordinateRange(t, a)
	wantLimitsBy(t, res, delegated)
}

// wantHostIDsInSubordinateRange: the attestation names the agent's (or a service's) UID as the real host
// numbers it, a subordinate UID of this user's in a per-run slice (never the user's own UID,
// nor the daemon's own first slice), and keeps the daemon namespace's numbering apart.
func wantHostIDsInSubordinateRange(t *testing.T, a *record.Attestation) {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	subuid, err := os.ReadFile("/etc/subuid")
	if err != nil {
		t.Fatal(err)
	}
	start, count, _, err := launcher.SubordinateIDs(subuid, u.Username, os.Getuid(), 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	// rootlesskit maps the daemon's IDs 1.. to the range: the daemon's own slice is its first 65535.
	first := int(start) + int(launcher.RootlessSliceHostID(0)) - 1
	end := int(start) + int(count)
	if a.HostUID == os.Getuid() || a.HostUID < first || a.HostUID >= end || a.HostGID < first || a.HostGID >= end {
		t.Fatalf("host_uid/host_gid %d/%d: want a per-run slice of %s's subordinate range [%d, %d) past the daemon's own, not the user's own UID %d",
			a.HostUID, a.HostGID, u.Username, first, end, os.Getuid())
	}
	if len(a.UIDMap) != 1 || int(a.UIDMap[0].HostID) < first || int(a.UIDMap[0].HostID)+int(a.UIDMap[0].Size) > end ||
		a.HostUID != int(a.UIDMap[0].HostID)+a.UID {
		t.Fatalf("uid_map %+v: want the run's slice in host IDs, holding host_uid %d as %d", a.UIDMap, a.HostUID, a.UID)
	}
	d := a.DaemonUserNS
	if d == nil || d.HostUID != a.HostUID-int(start)+1 || len(d.UIDMap) != 1 || d.UIDMap[0].HostID < launcher.RootlessSliceHostID(0) {
		t.Fatalf("daemon_userns %+v: want the daemon namespace's numbering of host_uid %d", d, a.HostUID)
	}
}

func TestRootlessRunForkBombIsHeld(t *testing.T) {
	env, delegated := rootlessEnv(t)
	// The shell gives up at the first fork that fails; its error is the proof.
	p := rootlessTask(t, "rl-forkbomb", `exec 2>/workspace/fork.err
i=0
while [ $i -lt 200 ]; do sleep 60 & i=$((i+1)); done`, "timeout: 60s, memory_mb: 256, pids: 32, disk_mb: 16",
		"success_criteria:\n  - {type: file_contains, path: fork.err, includes: [fork], description: a fork failed}\n")
	start := time.Now()
	res, dir := rootlessRun(t, env, p)
	if res.Status != "SUCCESS" {
		t.Fatalf("status %s: %s", res.Status, res.Error)
	}
	errs, _ := os.ReadFile(filepath.Join(dir, record.WorkspaceDir, "fork.err"))
	if !bytes.Contains(errs, []byte("fork")) {
		t.Fatalf("200 forks under pids 32 all succeeded? stderr of the loop: %q", errs)
	}
	// The 60 s sleepers die with the init: the run does not wait for them.
	if d := time.Since(start); d > 45*time.Second {
		t.Fatalf("run took %s: the sleepers outlived the agent", d)
	}
	wantLimitsBy(t, res, delegated)
}

func TestRootlessRunMemoryHogIsStopped(t *testing.T) {
	env, delegated := rootlessEnv(t)
	// tail keeps the whole newline-free line in memory: 512 MiB against a 64 MiB limit.
	p := rootlessTask(t, "rl-memhog", `head -c 536870912 /dev/zero | tail > /dev/null
echo "rc=$?" > /workspace/rc
touch /workspace/done`, "timeout: 60s, memory_mb: 64, pids: 32, disk_mb: 16", "")
	res, dir := rootlessRun(t, env, p)
	rc, _ := os.ReadFile(filepath.Join(dir, record.WorkspaceDir, "rc"))
	// By RLIMIT_AS the hog's allocation fails; by the memory cgroup the OOM killer ends the
	// hog or the shell that waits for it, whichever it picks.
	failed := len(rc) > 0 && string(rc) != "rc=0\n"
	if !failed && res.Resources.OOMKills == 0 {
		t.Fatalf("status %s, the hog's %q, %d OOM kills: it was not stopped", res.Status, rc, res.Resources.OOMKills)
	}
	wantLimitsBy(t, res, delegated)
}

func TestRootlessRunWorkspaceDiskCapStopsWrites(t *testing.T) {
	env, _ := rootlessEnv(t)
	p := rootlessTask(t, "rl-disk", `dd if=/dev/zero of=/workspace/big bs=1M count=64 2>/dev/null
echo "rc=$?" > /workspace/rc
touch /workspace/done`, "timeout: 60s, memory_mb: 128, pids: 32, disk_mb: 8", "")
	res, dir := rootlessRun(t, env, p)
	st, err := os.Stat(filepath.Join(dir, record.WorkspaceDir, "big"))
	rc, _ := os.ReadFile(filepath.Join(dir, record.WorkspaceDir, "rc"))
	if err == nil && st.Size() > 8<<20 || string(rc) == "rc=0\n" {
		t.Fatalf("dd of 64 MiB into an 8 MiB cap: %q, %d bytes written", rc, st.Size())
	}
	if !strings.Contains(strings.Join(res.LimitsHit, "\n"), "workspace disk limit") {
		t.Fatalf("limits_hit %q lacks the disk cap", res.LimitsHit)
	}
}

func TestRootlessRunMockedToolIsAnsweredFromTheHostOnly(t *testing.T) {
	env, _ := rootlessEnv(t)
	// memory_mb 1024: in rlimit mode it is RLIMIT_AS, and the mock client, a Go program,
	// reserves some 700 MiB of address space at start.
	p := rootlessTask(t, "rl-mock", `gh pr list > /workspace/out.txt 2>&1
touch /workspace/done`, "timeout: 60s, memory_mb: 1024, pids: 32, disk_mb: 16",
		"protected_mocks:\n  - {tool: gh, fixture: gh.yaml, max_requests: 5}\nsuccess_criteria:\n"+
			"  - {type: file_contains, path: out.txt, includes: ['#7 fix the flaky test'], description: the mock answered}\n"+
			"  - {type: cli_called, tool: gh, argv: {positional: [pr, list]}, description: the host recorded the call}\n")
	if err := os.WriteFile(filepath.Join(filepath.Dir(p), "gh.yaml"), []byte("version: 1\nresponses:\n  - argv: [pr, list]\n    stdout: \"#7 fix the flaky test\\n\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, dir := rootlessRun(t, env, p)
	if res.Status != "SUCCESS" {
		out, _ := os.ReadFile(filepath.Join(dir, record.WorkspaceDir, "out.txt"))
		t.Fatalf("status %s %s %+v: %s", res.Status, res.Error, res.Criteria, out)
	}
}

func TestRootlessRunReachesTheReplayGatewayOnlyInsideItsLoopback(t *testing.T) {
	env, _ := rootlessEnv(t)
	fixture := `{"api":"anthropic","depth":0,"tools":false,"status":200,"content_type":"application/json","response":"{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"replayed-answer\"}],\"usage\":{\"input_tokens\":11,\"output_tokens\":5}}"}` + "\n"
	p := rootlessTask(t, "rl-gateway", `printf '%s' '{"model":"any","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}' > /tmp/req.json
wget -q -O /workspace/out.txt --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file /tmp/req.json "$CEVAL_GATEWAY_URL/v1/messages"
echo "exit=$?" >> /workspace/out.txt
touch /workspace/done`, "timeout: 60s, memory_mb: 128, pids: 32, disk_mb: 16",
		"success_criteria:\n  - {type: file_contains, path: out.txt, includes: [replayed-answer, exit=0], description: the gateway replayed}\n")
	if err := os.WriteFile(filepath.Join(filepath.Dir(p), "calls.jsonl"), []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	doc := strings.Replace(string(data), "  type: command\n", "  type: command\n  model: claude-pinned\n  gateway: {mode: replay, fixture: calls.jsonl}\n", 1)
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	res, dir := rootlessRun(t, env, p)
	if res.Status != "SUCCESS" || res.Gateway == nil || res.Gateway.Mode != "replay" || res.Gateway.Turns != 1 {
		out, _ := os.ReadFile(filepath.Join(dir, record.WorkspaceDir, "out.txt"))
		t.Fatalf("status %s %s gateway %+v: %s", res.Status, res.Error, res.Gateway, out)
	}
}

func TestRootlessKillNineOfCevalThenGCLeavesNothingBehind(t *testing.T) {
	env, _ := rootlessEnv(t)
	p := rootlessTask(t, "rl-kill9", "touch /workspace/started\nsleep 600", "timeout: 5m, memory_mb: 128, pids: 32, disk_mb: 16", "")
	runs := t.TempDir()
	cmd := exec.Command(cevalBin, "run", "--allow-rlimit-limits", "--runs-dir", runs, p)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// ceval prints each lifecycle event as it happens: kill it once the agent runs.
	buf := make([]byte, 4096)
	var seen []byte
	for !bytes.Contains(seen, []byte("agent_started")) {
		n, err := stderr.Read(buf)
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("ceval ended before the agent started: %v\n%s", err, seen)
		}
		seen = append(seen, buf[:n]...)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	r := rootlessCeval(t, env, "gc", "--allow-rlimit-limits")
	if r.code != 0 || !strings.Contains(r.stdout, "removed container") {
		t.Fatalf("gc exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = rootlessCeval(t, env, "gc", "--allow-rlimit-limits")
	if r.code != 0 || !strings.Contains(r.stdout, "gc: removed 0, kept 0") {
		t.Fatalf("a second gc found more: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestRootlessRunWithoutDelegationOrOptInIsRefusedWithBothFixes(t *testing.T) {
	env, delegated := rootlessEnv(t)
	if delegated {
		t.Skip("in the other limit mode: a cgroup subtree is delegated to this user (.ci/run runs this after ceval rootless teardown)")
	}
	r := rootlessCeval(t, env, "run", "--runs-dir", t.TempDir(), "../../examples/hello/task.yaml")
	if r.code != exitInvalid || !strings.Contains(r.stderr, "ceval rootless setup --user") || !strings.Contains(r.stderr, "--allow-rlimit-limits") {
		t.Fatalf("exit %d, want %d with both fixes:\n%s", r.code, exitInvalid, r.stderr)
	}
}

func TestRootlessRunPastItsTimeoutIsKilledWithEverythingItStarted(t *testing.T) {
	env, _ := rootlessEnv(t)
	// SIGTERM ignored, a child that ignores it too: only the SIGKILL after the grace ends them.
	p := rootlessTask(t, "rl-timeout", `trap '' TERM
sh -c "trap '' TERM; sleep 600" &
touch /workspace/started
sleep 600`, "timeout: 2s, memory_mb: 128, pids: 32, disk_mb: 16",
		"success_criteria:\n  - {type: file_exists, path: started, description: the agent ran}\n")
	start := time.Now()
	res, _ := rootlessRun(t, env, p)
	if !res.Agent.TimedOut || res.Status != "TIMEOUT" {
		t.Fatalf("status %s timed_out %v: %s", res.Status, res.Agent.TimedOut, res.Error)
	}
	if d := time.Since(start); d > 40*time.Second {
		t.Fatalf("the run took %s past a 2 s timeout", d)
	}
}

// rootlessExamplesEnv names the directory .ci/run fills as root for
// TestRootlessRunOfTheRealCLIAndPackageExamplesMatchesRoot: images/*.tar, the agent and
// package images exported from root's daemon (ceval images export), and root/, root's run
// directory of the same examples. A test as the user reaches neither root's daemon nor its
// image cache, and building the images again as the user would cost minutes.
const rootlessExamplesEnv = "CEVAL_ROOTLESS_EXAMPLES"

// The real Claude Code and Codex CLIs (replayed by the gateway) and the package-image example
// run end to end as the rootless user, in the very images root ran them in, and come out as
// root's runs did: same status, score and verdict per criterion.
func TestRootlessRunOfTheRealCLIAndPackageExamplesMatchesRoot(t *testing.T) {
	env, delegated := rootlessEnv(t)
	dir := os.Getenv(rootlessExamplesEnv)
	if dir == "" {
		msg := rootlessExamplesEnv + " is unset: as root, run the examples (ceval run --runs-dir DIR/root examples/{claude-code,codex,python-packages}/task.yaml), export their images (ceval images export NAME -o DIR/images/NAME.tar) and make DIR readable by this user (.ci/run does)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	env = rootlessCevalEnv(os.Getenv(launcher.RootlessAddressEnv)) // as a user runs them: the default namespace
	importRootImages(t, env, filepath.Join(dir, "images"))
	for _, ex := range []string{"claude-code", "codex", "python-packages"} {
		t.Run(ex, func(t *testing.T) {
			path := filepath.Join("..", "..", "examples", ex, "task.yaml")
			tk, err := task.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			root := readRootResult(t, filepath.Join(dir, "root"), tk.ID)
			res, _ := rootlessRun(t, env, path)
			if res.Status != root.Status || res.Score != root.Score || res.Image.ManifestDigest != root.Image.ManifestDigest {
				t.Fatalf("rootless: %s %.2f in %s (%s); root: %s %.2f in %s (%s)", res.Status, res.Score, res.Image.Name, res.Image.ManifestDigest,
					root.Status, root.Score, root.Image.Name, root.Image.ManifestDigest)
			}
			if len(res.Criteria) != len(root.Criteria) {
				t.Fatalf("%d criteria graded, root %d", len(res.Criteria), len(root.Criteria))
			}
			for i, c := range res.Criteria {
				if r := root.Criteria[i]; c.Status != r.Status || c.Score != r.Score || c.Passed != r.Passed {
					t.Errorf("criterion %q: %s %.2f, root %s %.2f (%s)", c.Description, c.Status, c.Score, r.Status, r.Score, c.Details)
				}
			}
			if res.Status != "SUCCESS" {
				t.Errorf("%s (as root too): %s", res.Status, res.Error)
			}
			wantHostIDsInSubordinateRange(t, res.Isolation)
			wantLimitsBy(t, res, delegated)
		})
	}
}

// importRootImages imports each archive in dir into the user's daemon (its default namespace)
// unless an image of that name already resolves to the archive's manifest.
func importRootImages(t *testing.T, env []string, dir string) {
	t.Helper()
	archives, _ := filepath.Glob(filepath.Join(dir, "*.tar"))
	if len(archives) == 0 {
		t.Fatalf("no image archives in %s", dir)
	}
	// The images stay across this test's processes (.ci/run runs it in both limit modes): one
	// import of the ~1 GB agent image per daemon, not per run.
	c, ctx, err := launcher.Connect(context.Background(), os.Getenv(launcher.RootlessAddressEnv), launcher.DefaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, a := range archives {
		name, manifest := archiveImage(t, a)
		if img, err := c.ImageService().Get(ctx, name); err == nil && img.Target.Digest == manifest {
			continue
		}
		start := time.Now()
		if r := rootlessCeval(t, env, "images", "import", a); r.code != 0 {
			t.Fatalf("images import %s: exit %d\n%s%s", a, r.code, r.stdout, r.stderr)
		}
		t.Logf("imported %s in %s", name, time.Since(start).Round(time.Millisecond))
	}
}

// archiveImage returns the one image an OCI archive from ceval images export names.
func archiveImage(t *testing.T, path string) (string, digest.Digest) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f) // a file: the blobs before index.json are skipped by seeking
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no index.json: %v", path, err)
		}
		if h.Name != "index.json" {
			continue
		}
		var idx ocispec.Index
		if err := json.NewDecoder(tr).Decode(&idx); err != nil {
			t.Fatalf("%s: index.json: %v", path, err)
		}
		if len(idx.Manifests) != 1 || idx.Manifests[0].Annotations[ctrimages.AnnotationImageName] == "" {
			t.Fatalf("%s: want one named image, index %+v", path, idx)
		}
		return idx.Manifests[0].Annotations[ctrimages.AnnotationImageName], idx.Manifests[0].Digest
	}
}

// readRootResult reads root's result of task id under runs (ceval run --runs-dir runs).
func readRootResult(t *testing.T, runs, id string) *record.Result {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(runs, "*", "*", id, "1", record.ResultFile))
	if len(m) != 1 {
		t.Fatalf("want root's one result.json of %s under %s, found %v", id, runs, m)
	}
	data, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	var res record.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("%s: %v", m[0], err)
	}
	return &res
}
