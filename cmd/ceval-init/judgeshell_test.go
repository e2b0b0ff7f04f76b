package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// ceval-init --judge-shell runs a judge agent's command in a Landlock domain: it writes
// under /tmp (and /workspace, /dev) but nowhere else, even through a process it leaves
// behind or git over a repository's core.fsmonitor, and it cannot signal a process outside
// the domain (here the test). Without the ruleset the outside files are written and the
// signal delivered.
func TestJudgeShellConfinesTheCommand(t *testing.T) {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 || abi < judgeShellMinABI {
		if os.Getenv("CI") != "" {
			t.Fatalf("this kernel has no Landlock ABI %d (got %d, %v): the judge's commands cannot be confined here", judgeShellMinABI, abi, errno)
		}
		t.Skipf("no Landlock ABI %d here", judgeShellMinABI)
	}
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash")
	}
	inTmp, err := os.MkdirTemp("/tmp", "judgeshell-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(inTmp)
	outside := outsideTheDomain(t)
	script := `printf ok >` + inTmp + `/in
printf forged 2>` + inTmp + `/err1 >` + outside + `/verdict
( sleep 0.2; printf forged 2>` + inTmp + `/err2 >` + outside + `/later ) &
kill -0 $PPID 2>` + inTmp + `/err3 && echo signalled
echo "HOME=$HOME"
wait`
	out, err := exec.Command(initPath, judgeShellArg, script).CombinedOutput()
	if err != nil {
		t.Fatalf("ceval-init %s: %v\n%s", judgeShellArg, err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(inTmp, "in")); string(b) != "ok" {
		t.Errorf("the command could not write under /tmp: %q", b)
	}
	for _, f := range []string{"verdict", "later"} {
		if _, err := os.Stat(filepath.Join(outside, f)); err == nil {
			t.Errorf("the command (or what it left behind) wrote %s outside /tmp, /workspace and /dev", f)
		}
	}
	for _, f := range []string{"err1", "err2"} {
		if b, _ := os.ReadFile(filepath.Join(inTmp, f)); !strings.Contains(string(b), "Permission denied") {
			t.Errorf("%s: %q, want Permission denied", f, b)
		}
	}
	if _, err := exec.LookPath("git"); err == nil {
		// git over a .git/config the agent wrote: its core.fsmonitor runs in the domain.
		repo := filepath.Join(inTmp, "repo")
		if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
		hook := "printf forged >" + outside + "/by-fsmonitor 2>" + inTmp + "/err4; printf ran >" + inTmp + "/fsmonitor-ran; exit 1"
		if err := os.WriteFile(filepath.Join(repo, "hook.sh"), []byte(hook), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("git", "-C", repo, "add", "hook.sh").CombinedOutput(); err != nil {
			t.Fatalf("git add: %v %s", err, out)
		}
		if out, err := exec.Command("git", "-C", repo, "config", "core.fsmonitor", "sh "+repo+"/hook.sh").CombinedOutput(); err != nil {
			t.Fatalf("git config: %v %s", err, out)
		}
		gout, err := exec.Command(initPath, judgeShellArg, "cd "+repo+" && git status").CombinedOutput()
		if err != nil {
			t.Errorf("git status behind %s: %v\n%s", judgeShellArg, err, gout)
		}
		if _, err := os.Stat(filepath.Join(inTmp, "fsmonitor-ran")); err != nil {
			t.Errorf("git status did not run the fsmonitor:\n%s", gout)
		}
		if _, err := os.Stat(filepath.Join(outside, "by-fsmonitor")); err == nil {
			t.Errorf("the repository's core.fsmonitor wrote outside /tmp, /workspace and /dev")
		}
	}
	if strings.Contains(string(out), "signalled") {
		t.Errorf("the command signalled a process outside its domain:\n%s", out)
	}
	if !strings.Contains(string(out), "HOME="+judgeShellHome) {
		t.Errorf("HOME is not %s:\n%s", judgeShellHome, out)
	}
}

func TestJudgeShellUsage(t *testing.T) {
	out, err := exec.Command(initPath, judgeShellArg).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "usage") {
		t.Errorf("no script: %v %q", err, out)
	}
}

// Started as a shell (argv[0] sh, dash or bash, as a Codex judge's container binds it over
// /bin/sh and at /usr/lib/ceval-judge/bash), the init confines itself as --judge-shell does
// and runs /bin/bash with the shell's own arguments (-lc CMD, -c CMD ARG0 ARGS): the command
// writes under /tmp, not outside, nor does what it leaves behind, and cannot signal the test;
// as sh it is bash in POSIX mode. Without the ruleset the outside files are written.
func TestInitStartedAsAShellConfinesTheCommand(t *testing.T) {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 || abi < judgeShellMinABI {
		if os.Getenv("CI") != "" {
			t.Fatalf("this kernel has no Landlock ABI %d (got %d, %v): the judge's commands cannot be confined here", judgeShellMinABI, abi, errno)
		}
		t.Skipf("no Landlock ABI %d here", judgeShellMinABI)
	}
	if _, err := os.Stat(judgeShellReal); err != nil {
		t.Skip("no " + judgeShellReal)
	}
	for _, tc := range []struct {
		argv0 string
		args  []string
	}{
		{"/bin/sh", []string{"-lc"}},
		{"sh", []string{"-c"}},
		{"dash", []string{"-c"}},
		{"/usr/lib/ceval-judge/bash", []string{"-lc"}},
	} {
		t.Run(filepath.Base(tc.argv0)+tc.args[0], func(t *testing.T) {
			inTmp, err := os.MkdirTemp("/tmp", "judgeshell-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(inTmp)
			outside := outsideTheDomain(t)
			script := `printf ok >` + inTmp + `/in
printf forged 2>` + inTmp + `/err1 >` + outside + `/verdict
( sleep 0.2; printf forged >` + outside + `/later ) 2>/dev/null &
kill -0 $PPID 2>/dev/null && echo signalled
echo "posix=$POSIXLY_CORRECT args=$0,$1 HOME=$HOME"
wait`
			cmd := exec.Command(initPath, append(tc.args, script, "zero", "one")...)
			cmd.Args[0] = tc.argv0
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("ceval-init as %s: %v\n%s", tc.argv0, err, out)
			}
			if b, _ := os.ReadFile(filepath.Join(inTmp, "in")); string(b) != "ok" {
				t.Errorf("the command could not write under /tmp: %q\n%s", b, out)
			}
			for _, f := range []string{"verdict", "later"} {
				if _, err := os.Stat(filepath.Join(outside, f)); err == nil {
					t.Errorf("the command (or what it left behind) wrote %s outside /tmp, /workspace and /dev", f)
				}
			}
			if strings.Contains(string(out), "signalled") {
				t.Errorf("the command signalled a process outside its domain:\n%s", out)
			}
			wantPosix := "posix= "
			if filepath.Base(tc.argv0) != "bash" {
				wantPosix = "posix=y "
			}
			if !strings.Contains(string(out), wantPosix+"args=zero,one HOME="+judgeShellHome) {
				t.Errorf("want %sargs=zero,one HOME=%s:\n%s", wantPosix, judgeShellHome, out)
			}
		})
	}
}

// A judge's shell started from a judge's shell, 20 deep (past the kernel's 16 Landlock
// layers: scripts that run scripts), still runs its command, confined. Red with E2BIG an
// error: the command refused from the 16th shell on.
func TestJudgeShellsNestPastLandlocksLayers(t *testing.T) {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 || abi < judgeShellMinABI {
		if os.Getenv("CI") != "" {
			t.Fatalf("this kernel has no Landlock ABI %d (got %d, %v)", judgeShellMinABI, abi, errno)
		}
		t.Skipf("no Landlock ABI %d here", judgeShellMinABI)
	}
	if _, err := os.Stat(judgeShellReal); err != nil {
		t.Skip("no " + judgeShellReal)
	}
	inTmp, err := os.MkdirTemp("/tmp", "judgeshell-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(inTmp)
	outside := outsideTheDomain(t)
	// Each level starts the init as bash again (exec -a), as a script's #!/bin/sh would.
	script := `n=$1
if [ "$n" -lt 20 ]; then exec -a bash "$INIT" -c "$SCRIPT" bash $((n+1)); fi
printf forged 2>/dev/null >` + outside + `/deep
echo "depth=$n"; printf ok >` + inTmp + `/deep`
	cmd := exec.Command(initPath, "-c", script, "bash", "1")
	cmd.Args[0] = "bash"
	cmd.Env = append(os.Environ(), "INIT="+initPath, "SCRIPT="+script)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "depth=20") {
		t.Fatalf("20 nested judge shells: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(inTmp, "deep")); string(b) != "ok" {
		t.Errorf("the deepest command could not write under /tmp: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "deep")); err == nil {
		t.Errorf("the deepest command wrote outside /tmp, /workspace and /dev")
	}
}

// outsideTheDomain makes a directory that no path the judge's domain may write
// (judgeShellWritable) contains: the package's directory, unless the checkout is itself under
// one of them (a clone in /tmp: there every write the tests expect refused is allowed, and
// they failed for it), else /var/tmp or $HOME. Removed at the test's end.
func outsideTheDomain(t *testing.T) string {
	t.Helper()
	wd, _ := os.Getwd()
	for _, parent := range []string{wd, "/var/tmp", os.Getenv("HOME")} {
		real, err := filepath.EvalSymlinks(parent)
		if parent == "" || err != nil || underAny(real, judgeShellWritable) {
			continue
		}
		dir, err := os.MkdirTemp(real, ".judgeshell-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	t.Fatalf("no writable directory outside %v (tried the package's directory %s, /var/tmp and $HOME) to check that the judge's commands cannot write there", judgeShellWritable, wd)
	return ""
}

func underAny(path string, roots []string) bool {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, r+"/") {
			return true
		}
	}
	return false
}
