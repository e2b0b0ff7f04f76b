package main

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// initPath is the init built once for all tests, run as a subprocess like in a container.
var initPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ceval-init-test-")
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	initPath = filepath.Join(dir, "ceval-init")
	build := exec.Command("go", "build", "-trimpath", "-o", initPath, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		os.Stderr.WriteString("build ceval-init: " + err.Error() + "\n" + string(out))
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// mode is how the init runs: on the host as a subreaper that walks /proc, or as PID 1 of a
// fresh PID namespace, where it uses kill(-1) exactly as in a container.
type mode struct {
	name  string
	pidns bool
}

var (
	hostMode = mode{"host", false}
	pid1Mode = mode{"pid1", true}
)

// eachMode runs f once per mode; PID 1 mode is skipped where PID namespaces are unavailable.
func eachMode(t *testing.T, f func(t *testing.T, m mode)) {
	for _, m := range []mode{hostMode, pid1Mode} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			if m.pidns {
				requirePIDNamespace(t)
			}
			f(t, m)
		})
	}
}

func requirePIDNamespace(t *testing.T) {
	t.Helper()
	cmd := exec.Command(initPath, "--", "true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run in a new PID namespace: %v", err)
	}
}

// proc is one running init.
type proc struct {
	t              *testing.T
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	started        time.Time
}

func startInit(t *testing.T, m mode, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, cmd: exec.Command(initPath, args...)}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.WaitDelay = 5 * time.Second // a survivor holding the pipes must not hang the test
	if m.pidns {
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start init: %v", err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// result is how an init run ended.
type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

func (p *proc) wait() result {
	p.t.Helper()
	err := p.cmd.Wait()
	elapsed := time.Since(p.started)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		p.t.Fatalf("wait init: %v", err)
	}
	ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		p.t.Fatalf("init itself died of %v; stderr: %s", ws.Signal(), p.stderr.String())
	}
	return result{ws.ExitStatus(), p.stdout.String(), p.stderr.String(), elapsed}
}

func runInit(t *testing.T, m mode, args ...string) result {
	t.Helper()
	return startInit(t, m, args...).wait()
}

// uniqueSleep returns a sleep duration argument no other process on the machine has, so a
// process can be found in /proc by its command line whatever PID namespace it is in.
func uniqueSleep(seconds int) string {
	return strconv.Itoa(seconds) + "." + strconv.Itoa(100000+rand.IntN(900000))
}

// pidsWithArg lists live processes (host PIDs) having arg as a command-line argument.
func pidsWithArg(t *testing.T, arg string) []int {
	t.Helper()
	names, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		for _, a := range bytes.Split(data, []byte{0}) {
			if string(a) == arg {
				pid, _ := strconv.Atoi(strings.Split(name, "/")[2])
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// zombieChildren counts children of pid in state Z, from the host's /proc.
func zombieChildren(t *testing.T, pid int) int {
	t.Helper()
	names, _ := filepath.Glob("/proc/[0-9]*")
	n := 0
	for _, name := range names {
		p, _ := strconv.Atoi(filepath.Base(name))
		if e, ok := readStat(p); ok && e.ppid == pid && e.state == 'Z' {
			n++
		}
	}
	return n
}

// waitFile polls for path to exist, as a handshake with the agent script.
func waitFile(t *testing.T, path string, timeout time.Duration) {
	t.Helper()
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s did not appear within %v", path, timeout)
}

func TestExitCodeIsTheAgents(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   int
	}{
		{"success", "exit 0", 0},
		{"failure", "exit 3", 3},
		{"killed by SIGKILL", "kill -KILL $$", 128 + 9},
		{"killed by SIGUSR1", "kill -USR1 $$", 128 + 10},
	}
	eachMode(t, func(t *testing.T, m mode) {
		for _, tt := range tests {
			r := runInit(t, m, "--", "sh", "-c", tt.script)
			if r.code != tt.want || r.stdout != "" || r.stderr != "" {
				t.Errorf("%s: got exit %d stdout %q stderr %q, want exit %d and no output",
					tt.name, r.code, r.stdout, r.stderr, tt.want)
			}
		}
	})
}

func TestAgentSharesStdioEnvironmentAndWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	p := &proc{t: t, cmd: exec.Command(initPath, "--", "sh", "-c", `echo "out $FOO"; pwd; echo err >&2`)}
	p.cmd.Env = append(os.Environ(), "FOO=bar")
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := p.wait()
	if want := "out bar\n" + dir + "\n"; r.code != 0 || r.stdout != want || r.stderr != "err\n" {
		t.Errorf("got exit %d stdout %q stderr %q; want 0, %q, %q", r.code, r.stdout, r.stderr, want, "err\n")
	}
}

func TestStartFailure(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		agent string
		want  int
	}{
		{"not in PATH", "ceval-no-such-command", 127},
		{"missing path", filepath.Join(dir, "missing"), 127},
		{"not executable", notExec, 126},
		{"directory", dir, 126},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runInit(t, hostMode, "--", tt.agent, "arg")
			prefix := "ceval-init: start " + tt.agent + ": "
			if r.code != tt.want || r.stdout != "" || !strings.HasPrefix(r.stderr, prefix) ||
				strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("got exit %d stdout %q stderr %q; want exit %d, one stderr line starting %q",
					r.code, r.stdout, r.stderr, tt.want, prefix)
			}
		})
	}
}

func TestAgentIsLookedUpInPATHFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "my-agent")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"agent $1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: exec.Command(initPath, "--", "my-agent", "ran")}
	p.cmd.Env = append(os.Environ(), "PATH="+dir+":/usr/bin:/bin")
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if r := p.wait(); r.code != 0 || r.stdout != "agent ran\n" {
		t.Errorf("got exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"true"},
		{"--"},
		{"--timeout", "soon", "--", "true"},
		{"--grace=-1s", "--", "true"},
		{"--timeout"},
		{"--verbose", "--", "true"},
		{"--supervisor-fifo"},
		{"--supervisor-fifo", "relative/fifo", "--", "true"},
		{"--supervisor-fifo", "/nonexistent/fifo", "--", "true"},
		{"--supervisor-fifo", "/proc/self/status", "--", "true"}, // not a FIFO
		{"--rlimit-as", "0", "--", "true"},
		{"--rlimit-as", "lots", "--", "true"},
		{"--rlimit-as"},
		{"--control"},
		{"--control="},
		{"--control", "127.0.0.1:0", "--", "true"},
		{"--control", "127.0.0.1:0", "--timeout", "1s"},
		{"--timeout", "1s", "--control", "127.0.0.1:0"},
		{"--control", "not an address"},
	} {
		r := runInit(t, hostMode, args...)
		if r.code != exitUsage || r.stdout != "" || !strings.HasPrefix(r.stderr, "ceval-init: ") {
			t.Errorf("%q: got exit %d stdout %q stderr %q, want %d", args, r.code, r.stdout, r.stderr, exitUsage)
		}
	}
}

func TestParseArgs(t *testing.T) {
	cfg, err := parseArgs([]string{"--timeout=90s", "--grace", "2s", "--supervisor-fifo", "/s", "--", "agent", "--timeout", "x"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.timeout != 90*time.Second || cfg.grace != 2*time.Second || cfg.supervisorFIFO != "/s" ||
		strings.Join(cfg.argv, " ") != "agent --timeout x" {
		t.Errorf("got %+v", cfg)
	}
	if cfg, _ := parseArgs([]string{"--", "a"}); cfg.grace != defaultGrace || cfg.timeout != 0 {
		t.Errorf("defaults: got %+v", cfg)
	}
	for _, args := range [][]string{{"--control", "127.0.0.1:7170"}, {"--control=127.0.0.1:7170"}} {
		if cfg, err := parseArgs(args); err != nil || cfg.control != "127.0.0.1:7170" || cfg.argv != nil {
			t.Errorf("%q: got %+v, %v", args, cfg, err)
		}
	}
}

func TestThousandOrphansAreAllReaped(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		dir := t.TempDir()
		keeper := uniqueSleep(60)
		script := `i=0; while [ $i -lt 1000 ]; do (sleep 0 &); i=$((i+1)); done
(sleep ` + keeper + ` &)
: > ` + dir + `/ready
while [ ! -e ` + dir + `/go ]; do sleep 0.02; done`
		p := startInit(t, m, "--", "sh", "-c", script)
		waitFile(t, filepath.Join(dir, "ready"), 60*time.Second)
		initPid := p.cmd.Process.Pid

		// "ready" can be written before the keeper's subshell has exec'd sleep or exited
		// (reparenting the sleep to the init): wait for that state, bounded.
		var keepers []int
		var e procEntry
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			keepers = pidsWithArg(t, keeper)
			if len(keepers) == 1 {
				if e, _ = readStat(keepers[0]); e.ppid == initPid {
					break
				}
			}
			if time.Now().After(end) {
				break
			}
		}
		if len(keepers) != 1 {
			t.Fatalf("found %d processes running sleep %s, want 1", len(keepers), keeper)
		}
		if e.ppid != initPid {
			t.Errorf("orphan's parent is %d, want the init %d", e.ppid, initPid)
		}
		zombies := -1
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if zombies = zombieChildren(t, initPid); zombies == 0 {
				break
			}
		}
		if zombies != 0 {
			t.Errorf("%d zombie children of the init left unreaped", zombies)
		}

		os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
		r := p.wait()
		if r.code != 0 || r.stdout != "" || r.stderr != "" {
			t.Errorf("got exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
		if left := pidsWithArg(t, keeper); len(left) != 0 {
			t.Errorf("orphan %v survived the agent's exit", left)
		}
	})
}

func TestBackgroundProcessesDieWithTheAgent(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		orphan, session, ignoresTerm := uniqueSleep(60), uniqueSleep(61), uniqueSleep(62)
		script := `(sleep ` + orphan + ` &)
setsid sleep ` + session + ` &
(trap "" TERM; sleep ` + ignoresTerm + ` &)
sleep 0.2; exit 5`
		r := runInit(t, m, "--", "sh", "-c", script)
		if r.code != 5 || r.stdout != "" || r.stderr != "" {
			t.Errorf("got exit %d stdout %q stderr %q, want 5 and no output", r.code, r.stdout, r.stderr)
		}
		if r.elapsed > 3*time.Second {
			t.Errorf("init took %v to exit after its agent", r.elapsed)
		}
		for _, arg := range []string{orphan, session, ignoresTerm} {
			if left := pidsWithArg(t, arg); len(left) != 0 {
				t.Errorf("sleep %s (pid %v) survived the agent's exit", arg, left)
			}
		}
	})
}

func TestDeadlineKillsProcessThatIgnoresSIGTERM(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		stubborn := uniqueSleep(60)
		// 3 s: sh must have ignored TERM before the deadline, or the grace is not waited
		// out (a 1 s clock could run out first on a loaded host).
		r := runInit(t, m, "--timeout", "3s", "--grace", "500ms", "--",
			"sh", "-c", `trap "" TERM; (sleep `+stubborn+` &); sleep 60 & wait`)
		if r.code != exitDeadline || r.stdout != "" {
			t.Errorf("got exit %d stdout %q, want %d and no stdout", r.code, r.stdout, exitDeadline)
		}
		if want := "ceval-init: deadline 3s reached; killed all processes\n"; r.stderr != want {
			t.Errorf("stderr %q, want %q", r.stderr, want)
		}
		if r.elapsed < 3500*time.Millisecond || r.elapsed > 10*time.Second {
			t.Errorf("took %v, want timeout+grace = 3.5s (and under 10s)", r.elapsed)
		}
		if left := pidsWithArg(t, stubborn); len(left) != 0 {
			t.Errorf("process %v ignoring SIGTERM survived the deadline", left)
		}
	})
}

func TestDeadlineDoesNotWaitOutGraceWhenAgentStops(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		r := runInit(t, m, "--timeout", "300ms", "--grace", "30s", "--", "sleep", "60")
		if r.code != exitDeadline || r.stdout != "" || !strings.Contains(r.stderr, "deadline 300ms reached") {
			t.Errorf("got exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
		if r.elapsed > 5*time.Second {
			t.Errorf("took %v: waited out the grace period after the agent died", r.elapsed)
		}
	})
}

func TestSignalsAreForwardedToTheAgent(t *testing.T) {
	signals := []struct {
		name string
		sig  syscall.Signal
	}{
		{"TERM", syscall.SIGTERM}, {"INT", syscall.SIGINT}, {"HUP", syscall.SIGHUP},
		{"QUIT", syscall.SIGQUIT}, {"USR1", syscall.SIGUSR1}, {"USR2", syscall.SIGUSR2},
	}
	eachMode(t, func(t *testing.T, m mode) {
		for _, s := range signals {
			dir := t.TempDir()
			marker := filepath.Join(dir, "marker")
			script := `trap 'echo ` + s.name + ` > ` + marker + `; exit 7' ` + s.name + `
: > ` + dir + `/ready
while :; do sleep 0.02; done`
			p := startInit(t, m, "--", "sh", "-c", script)
			waitFile(t, filepath.Join(dir, "ready"), 10*time.Second)
			if err := p.cmd.Process.Signal(s.sig); err != nil {
				t.Fatal(err)
			}
			r := p.wait()
			got, _ := os.ReadFile(marker)
			if r.code != 7 || string(got) != s.name+"\n" || r.stdout != "" {
				t.Errorf("SIG%s: got exit %d marker %q stdout %q stderr %q; want 7 and marker %q",
					s.name, r.code, got, r.stdout, r.stderr, s.name)
			}
		}
	})
}

// The host-mode init must only ever signal its own descendants: kill(-1) as root there would
// take down the machine.
func TestHostModeDoesNotSignalProcessesOutsideItsTree(t *testing.T) {
	bystander := exec.Command("sleep", "60")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { bystander.Process.Kill(); bystander.Wait() }()

	r := runInit(t, hostMode, "--timeout", "200ms", "--grace", "200ms", "--",
		"sh", "-c", `trap "" TERM; sleep 60 & wait`)
	if r.code != exitDeadline {
		t.Fatalf("got exit %d stderr %q, want %d", r.code, r.stderr, exitDeadline)
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("bystander outside the init's tree was killed: %v", err)
	}
	if e, ok := readStat(bystander.Process.Pid); !ok || e.state == 'Z' {
		t.Fatalf("bystander outside the init's tree was killed (stat %+v)", e)
	}
}

func TestReadStatHandlesParenthesesInCommandName(t *testing.T) {
	e, ok := readStat(os.Getpid())
	if !ok || e.pid != os.Getpid() || e.ppid != os.Getppid() {
		t.Fatalf("readStat(self) = %+v, %v", e, ok)
	}
	dir := t.TempDir()
	odd := filepath.Join(dir, "a) Z 1 (b")
	if err := os.Symlink("/bin/sleep", odd); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(odd, "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if e, ok := readStat(cmd.Process.Pid); !ok || e.ppid != os.Getpid() || e.state == 'Z' {
		t.Errorf("readStat(%q) = %+v, %v; want parent %d", odd, e, ok, os.Getpid())
	}
}

// With --wait-go no agent code runs before the host's go-ahead, and the agent's stdin is
// /dev/null, not the host's channel.
func TestWaitGoStartsAgentOnlyAfterGoAhead(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "started")
	for _, tc := range []struct {
		name, input string
		code        int
		started     bool
	}{
		{"go-ahead", "go\n", 0, true},
		{"stdin closed", "", exitNoGo, false},
		{"wrong word", "no\n", exitNoGo, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(marker)
			p := &proc{t: t, cmd: exec.Command(initPath, "--wait-go", "--", "/bin/sh", "-c", "touch "+marker+"; cat")}
			p.cmd.Stdin = strings.NewReader(tc.input + "more input the agent must not see\n")
			p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
			p.started = time.Now()
			if err := p.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r := p.wait()
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, tc.code, r.stderr)
			}
			_, err := os.Stat(marker)
			if started := err == nil; started != tc.started {
				t.Fatalf("agent started = %v, want %v", started, tc.started)
			}
			if r.stdout != "" {
				t.Errorf("agent read the host's channel: %q", r.stdout)
			}
		})
	}
}

// supervisorFIFO makes a FIFO and opens it read-write as the host's supervisor does
// (launcher.Lifeline); closing the returned file is the supervisor dying.
func supervisorFIFO(t *testing.T) (string, *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "supervisor")
	if err := syscall.Mkfifo(path, 0o444); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return path, w
}

// kill -9 of ceval closes its end of the FIFO: the init must kill the agent and everything
// it started (a detached session and an orphan included), at once, not at its deadline.
func TestSupervisorGoneKillsEveryProcess(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		fifo, w := supervisorFIFO(t)
		marker := filepath.Join(t.TempDir(), "running")
		agent, session, orphan := uniqueSleep(60), uniqueSleep(61), uniqueSleep(62)
		script := `setsid sleep ` + session + ` &
(trap "" TERM; sleep ` + orphan + ` &)
touch ` + marker + `; exec sleep ` + agent
		p := startInit(t, m, "--timeout", "60s", "--supervisor-fifo", fifo, "--", "sh", "-c", script)
		waitFile(t, marker, 10*time.Second)
		for _, arg := range []string{agent, session, orphan} {
			for end := time.Now().Add(5 * time.Second); len(pidsWithArg(t, arg)) == 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("sleep %s never started", arg)
				}
			}
		}
		closed := time.Now()
		w.Close()
		r := p.wait()
		took := time.Since(closed)
		if r.code != exitOrphaned || !strings.Contains(r.stderr, "supervisor is gone") {
			t.Errorf("got exit %d stderr %q, want %d and why", r.code, r.stderr, exitOrphaned)
		}
		for _, arg := range []string{agent, session, orphan} {
			if left := pidsWithArg(t, arg); len(left) != 0 {
				t.Errorf("sleep %s (pid %v) outlived the supervisor", arg, left)
			}
		}
		t.Logf("FIFO closed -> init exited, every process killed: %v", took)
		if took > 2*time.Second {
			t.Errorf("took %v after the supervisor died", took)
		}
	})
}

// A supervisor that died between creating the container and the init's start: the FIFO has
// no writer, so the agent is never started, go-ahead or not.
func TestSupervisorGoneBeforeStartRunsNoAgent(t *testing.T) {
	fifo, w := supervisorFIFO(t)
	w.Close()
	marker := filepath.Join(t.TempDir(), "started")
	p := &proc{t: t, cmd: exec.Command(initPath, "--wait-go", "--supervisor-fifo", fifo, "--", "/bin/sh", "-c", "touch "+marker)}
	p.cmd.Stdin = strings.NewReader("go\n")
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := p.wait()
	if r.code != exitOrphaned {
		t.Fatalf("exit %d, want %d; stderr %q", r.code, exitOrphaned, r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the agent started although its supervisor was gone")
	}
}

// TestRlimitASBoundsTheAgentButNotTheInit: rootless without a memory cgroup, --rlimit-as is
// the agent's memory bound: in force (soft and hard, so it cannot raise it) from its first
// instruction, an allocation past it fails, and the init itself keeps no such limit.
func TestRlimitASBoundsTheAgentButNotTheInit(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		r := runInit(t, m, "--rlimit-as", strconv.Itoa(256<<20), "--", "sh", "-c",
			`grep "Max address space" /proc/self/limits; grep "Max address space" /proc/$PPID/limits
head -c 536870912 /dev/zero | tail >/dev/null; echo "hog=$?"; (ulimit -v unlimited) 2>/dev/null && echo raised; true`)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.code != 0 || len(lines) != 3 || strings.Fields(lines[0])[3] != "268435456" || strings.Fields(lines[0])[4] != "268435456" ||
			strings.Fields(lines[1])[3] != "unlimited" || lines[2] == "hog=0" {
			t.Fatalf("exit %d stdout %q stderr %q: want the agent's RLIMIT_AS 268435456/268435456, the init's unlimited, the 512 MiB hog failing and no raise", r.code, r.stdout, r.stderr)
		}
	})
}

func TestRlimitASDoesNotChangeHowAStartFailureExits(t *testing.T) {
	for _, tt := range []struct {
		argv0 string
		want  int
	}{{"/nonexistent/agent", exitNotFound}, {"/proc/self/status", exitCannotExec}} {
		r := runInit(t, hostMode, "--rlimit-as", strconv.Itoa(256<<20), "--", tt.argv0)
		if r.code != tt.want {
			t.Errorf("%s: exit %d (stderr %q), want %d", tt.argv0, r.code, r.stderr, tt.want)
		}
	}
}

// lateDaemon is an agent script (for sh -c, in host mode) whose daemon stops the init (as a
// loaded machine would deschedule it), lets the agent exit and watches /proc for the agent to
// have exited (a zombie, or gone) to write LATE to stdout and DIR/late, then lets the init go
// on. It continues the init whenever the agent is in a ptrace stop, where a traced agent waits
// for the init; with killInStop it first SIGKILLs the agent there, to end its held exit;
// with starve it first lowers the init's RLIMIT_NOFILE to 1, so the init cannot list /proc
// (as the agent's UID can: the init runs as the same UID).
func lateDaemon(dir string, killInStop, starve bool) string {
	onStop := `kill -CONT $init`
	if killInStop {
		onStop = `kill -KILL $main; kill -CONT $init`
	}
	starveInit := ""
	if starve {
		starveInit = `prlimit --pid $init --nofile=1:1 || exit 1
`
	}
	return `main=$$ init=$PPID
setsid sh -c '
main=$1 init=$2 dir=$3
` + starveInit + `kill -STOP $init
: >"$dir/stopped"
while :; do
	state=gone
	if read -r line <"/proc/$main/stat"; then set -- $line; state=$3; fi
	case $state in
	Z|gone) echo LATE; echo LATE >"$dir/late"; kill -CONT $init; exit 0;;
	t) ` + onStop + `;;
	esac
done' daemon $main $init ` + dir + ` </dev/null 2>/dev/null &
while [ ! -e ` + dir + `/stopped ]; do :; done
exit 0`
}

// The agent's exit completes only after every other process is dead: a daemon that waits for
// the agent to have exited, with the init held still in that window, never gets to write.
// (Host mode only: as PID 1 the init cannot be stopped from inside; the code path is the same.)
func TestDaemonCannotWriteAfterTheAgentExited(t *testing.T) {
	for _, killInStop := range []bool{false, true} {
		dir := t.TempDir()
		r := runInit(t, hostMode, "--", "sh", "-c", lateDaemon(dir, killInStop, false))
		_, err := os.Stat(filepath.Join(dir, "late"))
		late := err == nil || strings.Contains(r.stdout, "LATE")
		switch {
		case !killInStop && late:
			t.Errorf("the daemon wrote after the agent exited: stdout %q", r.stdout)
		case !killInStop && r.code != 0:
			t.Errorf("exit %d, want the agent's 0; stderr %q", r.code, r.stderr)
		// The kernel drops a signal to a process already exiting, so the agent's held exit
		// cannot be ended by another process; where one could, the exit must not count.
		case killInStop && late && r.code != 128+int(syscall.SIGKILL):
			t.Errorf("SIGKILL in the held exit: the daemon wrote after the agent exited and the exit is %d, want 137; stdout %q", r.code, r.stdout)
		case killInStop && !late && r.code != 0 && r.code != 128+int(syscall.SIGKILL):
			t.Errorf("SIGKILL in the held exit: exit %d, want 0 or 137; stderr %q", r.code, r.stderr)
		}
	}
}

// A daemon that starves the init of descriptors (prlimit on a process of the same UID) before
// the agent exits blinds its /proc walk: "no process found" must not pass for "every process
// dead". The init then cannot vouch for the exit and reports 137, never the agent's 0.
func TestDaemonThatStarvesTheInitOfDescriptorsCannotPassALateWrite(t *testing.T) {
	dir := t.TempDir()
	r := runInit(t, hostMode, "--", "sh", "-c", lateDaemon(dir, false, true))
	_, err := os.Stat(filepath.Join(dir, "late"))
	late := err == nil || strings.Contains(r.stdout, "LATE")
	if _, serr := os.Stat(filepath.Join(dir, "stopped")); serr != nil {
		t.Fatalf("the daemon never ran (prlimit failed?): exit %d, stderr %q", r.code, r.stderr)
	}
	if r.code != 128+int(syscall.SIGKILL) {
		t.Errorf("exit %d (late write: %v), want 137: an init that could not see every process must not report the agent's exit; stderr %q", r.code, late, r.stderr)
	}
}

// TestRlimitASAgentStartsWhateverItsEnvironment: the agent starts under a cap far below what
// a Go runtime reserves, with an environment its start must copy (6 MB, past the 4 MiB a Go
// heap maps at a time), and sees the cap. The limit is set on the agent itself at its exec
// stop; a Go program run between the setrlimit and the agent's execve (the earlier design)
// died of "runtime: out of memory" whenever its heap had to grow there: here always, on a
// loaded host about 1 start in 300, whatever the environment.
func TestRlimitASAgentStartsWhateverItsEnvironment(t *testing.T) {
	// execve takes arguments and environment up to a quarter of the stack limit.
	var stack syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &stack); err != nil {
		t.Fatal(err)
	}
	if stack.Cur != ^uint64(0) && stack.Cur < 64<<20 {
		raised := stack
		raised.Cur = min(64<<20, stack.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_STACK, &raised); err != nil || raised.Cur < 32<<20 {
			t.Skipf("cannot raise RLIMIT_STACK to pass a 6 MB environment: %v (hard limit %d)", err, stack.Max)
		}
		t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_STACK, &stack) })
	}
	eachMode(t, func(t *testing.T, m mode) {
		p := &proc{t: t, cmd: exec.Command(initPath, "--rlimit-as", strconv.Itoa(64<<20), "--", "sh", "-c",
			`grep "Max address space" /proc/self/limits; echo "env=${#CEVAL_BIG_0}"`)}
		p.cmd.Env = os.Environ()
		for i := range 60 {
			p.cmd.Env = append(p.cmd.Env, "CEVAL_BIG_"+strconv.Itoa(i)+"="+strings.Repeat("x", 100_000))
		}
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		p.cmd.WaitDelay = 5 * time.Second
		if m.pidns {
			p.cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
		}
		p.started = time.Now()
		if err := p.cmd.Start(); err != nil {
			t.Fatalf("start init: %v", err)
		}
		r := p.wait()
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.code != 0 || len(lines) != 2 || strings.Fields(lines[0])[3] != "67108864" || lines[1] != "env=100000" {
			t.Fatalf("exit %d stdout %q stderr %.600q: want the agent started under RLIMIT_AS 67108864 with its whole environment", r.code, r.stdout, r.stderr)
		}
	})
}

// An init started ahead of its run's turn waits for the go-ahead as long as the turn takes:
// the agent's --timeout counts from the go-ahead, so a 300 ms agent under a 1 s deadline
// runs to its end after a 1.5 s wait (red with the deadline from the init's start: killed,
// 137), and the deadline still ends an agent that outlives it.
func TestWaitGoDeadlineCountsFromTheGoAhead(t *testing.T) {
	for _, tc := range []struct {
		name, agent string
		code        int
	}{
		{"agent within its deadline", "sleep 0.3", 0},
		{"agent past its deadline", "sleep 5", exitDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &proc{t: t, cmd: exec.Command(initPath, "--wait-go", "--timeout", "1s", "--grace", "100ms", "--", "/bin/sh", "-c", tc.agent)}
			goR, goW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			p.cmd.Stdin = goR
			p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
			p.started = time.Now()
			if err := p.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			goR.Close()
			time.Sleep(1500 * time.Millisecond) // the run's turn comes later than the deadline
			goAhead := time.Now()
			if _, err := goW.Write([]byte("go\n")); err != nil {
				t.Fatal(err)
			}
			goW.Close()
			r := p.wait()
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, tc.code, r.stderr)
			}
			if ran := time.Since(goAhead); tc.code == exitDeadline && ran < time.Second {
				t.Fatalf("killed %v after the go-ahead, before its 1s deadline", ran)
			}
		})
	}
}
