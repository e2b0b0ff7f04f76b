package verifier

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/task"
)

// A test script forks a daemon that waits for the command to end and then prints the
// passing output: the result is read only after every process is killed and the cgroup is
// empty, so the daemon's line never counts.
func TestVerifierDaemonForkedByTheTestScriptCannotRewriteTheResult(t *testing.T) {
	e, _, ctx := newExecutor(t)
	s := snap(t, map[string]string{"test.sh*": `#!/bin/sh
main=$$
setsid sh -c "while kill -0 $main 2>/dev/null; do :; done; echo ok; echo forged > /workspace/result" </dev/null &
exit 0
`})
	c := container("./test.sh")
	want := "ok"
	c.StdoutScoring().ExpectedStdout = &want
	score, details, err := scoreParts(e.Execute(ctx, c, s, nil))
	if err != nil {
		t.Fatal(err)
	}
	if score != 0 || !strings.Contains(details, `stdout "" does not match`) {
		t.Errorf("score %v (%s): the daemon's late output counted", score, details)
	}
	// Each criterion sees the pristine snapshot: nothing the first one left is in the next.
	r, err := e.Run(ctx, container("ls /workspace"), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(r.Stdout)) != "test.sh" {
		t.Errorf("the next criterion's workspace holds %q, want only test.sh", r.Stdout)
	}
}

// A test script's daemon watches /proc for the command to have exited (a zombie, or gone)
// and only then prints the passing line: the init holds the command's exit until every other
// process is dead, so the daemon never sees it exit and its line never counts.
func TestVerifierDaemonThatSeesTheCommandExitCannotPrint(t *testing.T) {
	e, _, ctx := newExecutor(t)
	s := snap(t, map[string]string{"test.sh*": `#!/bin/sh
main=$$
setsid sh -c '
: >/tmp/watching
while :; do
	state=gone
	if read -r line <"/proc/$0/stat"; then set -- $line; state=$3; fi
	case $state in Z|gone) echo ALL TESTS PASSED; exit 0;; esac
done' $main </dev/null &
while [ ! -e /tmp/watching ]; do :; done
exit 0
`})
	c := container("./test.sh")
	want := "ALL TESTS PASSED"
	c.StdoutScoring().ExpectedStdout = &want
	// Without the held exit the daemon won its race with the init's kill in 3 of 32 runs here
	// (measured): this catches a regression most times; ceval-init's
	// TestDaemonCannotWriteAfterTheAgentExited holds the window open and fails every time.
	for i := 0; i < 10; i++ {
		r, err := e.Run(ctx, c, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		if score, details, _ := scoreOf(c, r); score != 0 || len(r.Stdout) != 0 {
			t.Fatalf("run %d: score %v (%s), stdout %q: the daemon's line, printed after the command exited, counted", i, score, details, r.Stdout)
		}
	}
}

// A Makefile-like script reads /reference: absent unless the criterion declares
// uses_reference, and read-only when it does.
func TestVerifierReferenceIsAbsentUnlessDeclared(t *testing.T) {
	e, _, ctx := newExecutor(t)
	refDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(refDir, "expected.txt"), []byte("SECRET-ANSWER\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref, err := task.OpenDir(refDir)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	s := snap(t, map[string]string{"check.sh*": "#!/bin/sh\ncat /reference/expected.txt; ls -la /reference; touch /reference/x && echo WROTE\n"})

	r, err := e.Run(ctx, container("./check.sh"), s, ref)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(r.Stdout), "SECRET-ANSWER") || strings.Contains(string(r.Stdout), "expected.txt") {
		t.Errorf("undeclared /reference was readable: %q", r.Stdout)
	}
	c := container("./check.sh")
	c.Spec.(*task.RunCommandSpec).UsesReference = true
	r, err = e.Run(ctx, c, s, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.Stdout), "SECRET-ANSWER") || strings.Contains(string(r.Stdout), "WROTE") {
		t.Errorf("declared /reference: stdout %q stderr %q, want the answer readable and no write", r.Stdout, r.Stderr)
	}
}

// The verifier has no network: only a loopback of its own, where a listener of the host's
// loopback is not.
func TestVerifierTestFileCannotReachTheNetwork(t *testing.T) {
	e, _, ctx := newExecutor(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	s := snap(t, map[string]string{"net_test.sh*": "#!/bin/sh\ncat /proc/net/dev | tail -n +3 | cut -d: -f1\necho x | nc -w 2 127.0.0.1 " + itoa(port) + " && echo CONNECTED\nwget -q -T 2 -O- http://1.1.1.1/ && echo FETCHED\nexit 0\n"})
	r, err := e.Run(ctx, container("./net_test.sh"), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(r.Stdout)); len(got) != 1 || got[0] != "lo" {
		t.Errorf("stdout %q: want only the interface lo and no connection", r.Stdout)
	}
	ln.Close()
	select {
	case <-accepted:
		t.Error("the host's loopback listener accepted a connection from the verifier")
	default:
	}
}

// A fork bomb is held by the pids limit; the command is stopped at the timeout (or its shell
// dies of a failed fork first, when the bomb took every pid), nothing survives it, and the
// criterion fails.
func TestVerifierForkBombIsBounded(t *testing.T) {
	e, _, ctx := newExecutor(t)
	s := snap(t, map[string]string{"bomb.sh*": "#!/bin/sh\nb() { b | b & }; b\nsleep 1000\n"})
	c := container("./bomb.sh")
	c.Execution().Timeout = 3 * time.Second
	start := time.Now()
	r, err := e.Run(ctx, c, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Exit.CgroupEmpty || (r.Exit.TimedOut != strings.HasPrefix(r.Limit, "timeout")) || (!r.Exit.TimedOut && r.ExitCode == 0) {
		t.Errorf("exit %+v limit %q: want stopped at the timeout or a failed exit, with nothing left", r.Exit, r.Limit)
	}
	if r.Resources.PidsPeak > 64 {
		t.Errorf("peak pids %d over the limit 64", r.Resources.PidsPeak)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
	if score, _, _ := scoreOf(c, r); score != 0 {
		t.Errorf("score %v, want 0", score)
	}
}

// A disk filler hits the workspace's cap (and /tmp's), never the host's disk.
func TestVerifierDiskFillerHitsTheCap(t *testing.T) {
	e, _, ctx := newExecutor(t)
	s := snap(t, map[string]string{"fill.sh*": "#!/bin/sh\ndd if=/dev/zero of=/workspace/big bs=1M count=1000 2>/dev/null || echo workspace-full\ndd if=/dev/zero of=/tmp/big bs=1M count=5000 2>/dev/null || echo tmp-full\ndu -sm /workspace/big | cut -f1\n"})
	c := container("./fill.sh")
	c.Verifier().MemoryMB = 512
	r, err := e.Run(ctx, c, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(r.Stdout))
	if len(lines) != 3 || lines[0] != "workspace-full" || lines[1] != "tmp-full" {
		t.Fatalf("stdout %q stderr %q", r.Stdout, r.Stderr)
	}
	if mb := lines[2]; len(mb) > 2 { // at most the 64 MiB cap
		t.Errorf("the workspace took %s MiB past its 64 MiB cap", mb)
	}
}

// A binary that looks for the agent's home, its credentials and the gateway's socket finds
// a fresh empty home, no secrets in its environment and nothing listening.
func TestVerifierCannotReachTheAgentsHomeOrGateway(t *testing.T) {
	e, _, ctx := newExecutor(t)
	s := snap(t, map[string]string{"probe.sh*": `#!/bin/sh
ls -A /home/agent
ls /run/ceval 2>/dev/null && echo MOCKS
env | grep -iE 'key|token|secret|anthropic|openai' && echo ENV
echo | nc -w 1 127.0.0.1 80 && echo GATEWAY
exit 0
`})
	r, err := e.Run(ctx, container("./probe.sh"), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(strings.TrimSpace(string(r.Stdout))) != 0 {
		t.Errorf("stdout %q: the verifier saw something of the agent's", r.Stdout)
	}
}

// Output past the cap is read and dropped, and the criterion fails on the limit.
func TestVerifierStdoutFloodIsCapped(t *testing.T) {
	e, _, ctx := newExecutor(t)
	e.opts.MaxOutput = 4096
	s := snap(t, nil)
	c := container("head -c 10000000 /dev/zero")
	r, err := e.Run(ctx, c, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stdout) != 4096 || !strings.HasPrefix(r.Limit, "stdout limit") {
		t.Errorf("kept %d bytes, limit %q", len(r.Stdout), r.Limit)
	}
}

// grader_files are at /task, read-only, for every container-tier criterion of the task; a
// task without them has no /task.
func TestVerifierGraderFilesAreReadOnlyAtTask(t *testing.T) {
	e, _, ctx := newExecutor(t)
	gf := t.TempDir()
	if err := os.MkdirAll(filepath.Join(gf, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gf, "tests", "check.sh"), []byte("grep -q 42 answer.txt && echo HIDDEN-TEST-RAN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := task.OpenDir(gf)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := snap(t, map[string]string{"answer.txt": "42\n"})
	c := container("sh /task/tests/check.sh; rm -f /task/tests/check.sh 2>/dev/null || echo READ-ONLY; touch /task/x 2>/dev/null || echo READ-ONLY")
	c.Verifier().GraderFiles = []task.GraderFile{{Root: d, Rel: "tests", Dir: true}}
	r, err := e.Run(ctx, c, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.Stdout); got != "HIDDEN-TEST-RAN\nREAD-ONLY\nREAD-ONLY\n" {
		t.Errorf("stdout %q (stderr %q)", got, r.Stderr)
	}
	r, err = e.Run(ctx, container("ls /task 2>/dev/null || echo NO-TASK"), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Stdout) != "NO-TASK\n" {
		t.Errorf("without grader_files: %q", r.Stdout)
	}
}

// A workspace whose snapshot cannot fit the verifier's cap fails its criterion (the
// workspace's doing), never ERROR.
func TestVerifierWorkspaceOverTheCapFailsNotErrors(t *testing.T) {
	e, _, ctx := newExecutor(t)
	s := snap(t, map[string]string{"big.bin": strings.Repeat("x", 3<<20)})
	c := container("true")
	c.Verifier().DiskMB = 1
	score, details, err := scoreParts(e.Execute(ctx, c, s, nil))
	if err != nil || score != 0 || !strings.Contains(details, "does not fit the verifier's workspace cap") {
		t.Errorf("score %v details %q err %v", score, details, err)
	}
}

// network: host is the user's decision: without AllowHostNetwork the criterion is not run
// (NOT_GRADED with the flag to pass); with it the container has the host's interfaces.
func TestVerifierHostNetworkNeedsTheUsersFlag(t *testing.T) {
	e, _, ctx := newExecutor(t)
	s := snap(t, nil)
	c := container("tail -n +3 /proc/net/dev | cut -d: -f1")
	c.Verifier().Network = policy.NetworkHost
	_, _, err := scoreParts(e.Execute(ctx, c, s, nil))
	var ng *grader.NotGradedError
	if !errors.As(err, &ng) || !strings.Contains(ng.Reason, "--allow-host-network") {
		t.Fatalf("without the flag: %v, want NOT_GRADED naming --allow-host-network", err)
	}
	e.opts.AllowHostNetwork = true
	r, err := e.Run(ctx, c, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(strings.Fields(string(r.Stdout))) < 2 {
		t.Errorf("with the flag the container sees only %q", r.Stdout)
	}
}

// A static Go binary the agent left in its workspace looks for the agent's home, the
// gateway's port, the mocks' sockets and credentials in any process's environment: it finds
// nothing, and runs as root of its own user namespace (the verifier's default).
func TestVerifierStaticBinaryFindsNothingOfTheAgents(t *testing.T) {
	e, _, ctx := newExecutor(t)
	bin := filepath.Join(t.TempDir(), "probe")
	build := exec.Command("go", "build", "-o", bin, "./testdata/probe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the probe: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	s := snap(t, map[string]string{"probe*": string(data)})
	r, err := e.Run(ctx, container("./probe"), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.Stdout); got != "uid 0\n" {
		t.Errorf("the probe found %q (stderr %q)", got, r.Stderr)
	}
}
