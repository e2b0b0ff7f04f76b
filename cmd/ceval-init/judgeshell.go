package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A judge agent (supervisor/agentjudge.go) runs code the agent under test wrote when its
// rubric asks: the agent's tests, its scripts, git over its .git/config. That code runs as
// the judge's user, and without more it could write the judge's verdict file, or reach the
// judge's CLI (signals, ptrace, /proc/PID/mem, fd, root, cwd) before the CLI exits. So every
// command of the judge's shell tool runs behind
//
//	ceval-init --judge-shell SCRIPT   (Claude Code's CLAUDE_CODE_SHELL_PREFIX)
//
// which puts itself in a Landlock domain and then execs bash -c SCRIPT: no file can be
// written, made, removed, renamed or truncated outside judgeShellWritable; no signal reaches
// and no abstract unix socket connects to a process outside the domain (scoping, ABI 6), and
// Landlock refuses ptrace (and so /proc/PID/mem, fd, root, cwd) of a process outside it at
// any ABI. The domain is inherited by everything the command starts, a background loop
// included, for good. A kernel without Landlock ABI 6 runs no command at all: the judge is
// never silently unprotected.
const judgeShellArg = "--judge-shell"

// judgeShellWritable are where a judge's commands may write: the judged copy, the
// temporary directory (the CLI's own command bookkeeping, such as the file each command
// writes its working directory to, is there) and devices (/dev/null, /dev/tty). Never the
// judge's directory (/judge, where the CLI writes the verdict with its own in-process tool)
// nor its home (the CLI's settings, read again while it runs).
var judgeShellWritable = []string{"/workspace", "/tmp", "/dev"}

// judgeShellHome is the HOME a judge's commands see: a directory of their own under /tmp,
// since they cannot write the CLI's home (tools keep caches under HOME).
const judgeShellHome = "/tmp/ceval-judge-home"

// judgeShellMinABI is the least Landlock ABI that confines a judge's commands: 6 scopes
// signals and abstract unix sockets to the domain.
const judgeShellMinABI = 6

// judgeShellShells are tried in order; the CLI's command strings are bash.
var judgeShellShells = []string{"/bin/bash", "/usr/bin/bash"}

// judgeShell is --judge-shell SCRIPT: it returns only when the command cannot start.
func judgeShell(args []string) int {
	if len(args) != 1 {
		logf("usage: ceval-init " + judgeShellArg + " SCRIPT")
		return exitUsage
	}
	for _, sh := range judgeShellShells {
		if _, err := os.Stat(sh); err == nil {
			return judgeShellExec(sh, []string{sh, "-c", args[0]})
		}
	}
	logf("no bash in the image (" + fmt.Sprint(judgeShellShells) + ")")
	return exitNotFound
}

// A Codex judge runs each command as SHELL -lc CMD (or -c), SHELL being the user's shell,
// else bash looked up on PATH, else /bin/sh: Codex 0.169 takes only a shell type from the
// model's exec_command (measured: shell /tmp/x/bash ran /bin/bash) and finds the executable
// itself. Its container binds this binary over /bin/sh (whatever the image's /bin/sh
// resolves to: busybox, dash) and at /usr/lib/ceval-judge/bash, first on the CLI's PATH,
// and gives the user /bin/sh as its shell (supervisor/agentjudge.go), so every shell Codex
// can start is this binary. Started as one of judgeShellAs (argv[0]'s last element, which
// Codex and every shell set to the name they ran), it confines itself as --judge-shell
// does and execs the real shell with the same arguments: bash, as sh when asked for sh.
// Nothing the command starts, a script's #!/bin/sh and a background loop included, gets out
// of the domain. The init itself is never started under these names.
var judgeShellAs = map[string]string{"sh": "sh", "dash": "sh", "bash": "bash"}

// judgeShellReal is the shell a judge shell execs: an image's bash is never bound over.
const judgeShellReal = "/bin/bash"

// judgeShellStartedAs is the argv[0] (sh or bash) this process runs as a judge's shell, or "".
func judgeShellStartedAs() string {
	if len(os.Args) == 0 {
		return ""
	}
	return judgeShellAs[filepath.Base(os.Args[0])]
}

// judgeShellOverBusybox says why a command cannot run in an agent image older than this
// ceval, whose /bin/sh links to busybox: the bind over /bin/sh covered /bin/busybox, so every
// other applet (ls, cat) starts the init; "" when this process was not started so.
func judgeShellOverBusybox() string {
	if exe, err := os.Readlink("/proc/self/exe"); err != nil || exe != "/bin/busybox" {
		return ""
	}
	return "the judge's command " + filepath.Base(os.Args[0]) + " was not run: this agent image's /bin/sh links to busybox, " +
		"which a Codex judge's shell covers (an image built by an older ceval); rebuild it with ceval images build-agent"
}

// judgeShellAsShell runs a judge's command given to a shell: args are the shell's own
// (-lc CMD, -c CMD ARG0 ARGS...), passed on unchanged to judgeShellReal as argv0.
func judgeShellAsShell(argv0 string, args []string) int {
	self, err1 := os.Stat("/proc/self/exe")
	real, err2 := os.Stat(judgeShellReal)
	if err1 != nil || err2 != nil || os.SameFile(self, real) {
		logf("the judge's command was not run: no " + judgeShellReal + " in the image other than ceval's judge shell")
		return exitNotFound
	}
	return judgeShellExec(judgeShellReal, append([]string{argv0}, args...))
}

// judgeShellExec confines this process (judgeShellRestrict) and execs path with argv; it
// returns only when the command cannot start, and never runs it unconfined.
func judgeShellExec(path string, argv []string) int {
	runtime.LockOSThread() // the domain is the calling thread's, and the exec below is on it
	if err := judgeShellRestrict(); err != nil {
		logf("the judge's command was not run: " + err.Error())
		return exitCannotExec
	}
	_ = os.MkdirAll(judgeShellHome, 0o700)
	env := os.Environ()
	for i, kv := range env {
		if len(kv) >= 5 && kv[:5] == "HOME=" {
			env[i] = "HOME=" + judgeShellHome
		}
	}
	err := syscall.Exec(path, argv, env)
	logf(fmt.Sprintf("exec %s: %v", path, err))
	return exitCannotExec
}

// judgeShellRestrict puts the calling thread (and what it execs) in the judge's commands'
// Landlock domain.
func judgeShellRestrict() error {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 || int(abi) < judgeShellMinABI {
		why := "none"
		if errno == 0 {
			why = fmt.Sprintf("ABI %d", abi)
		}
		return fmt.Errorf("the kernel's Landlock (%s) is not ABI %d or later, which ceval needs to keep the code a judge agent runs from rewriting its verdict or reaching its CLI; run agent_judge criteria on a kernel with Landlock ABI %d (Linux 6.12 or later, with landlock in its lsm= list)", why, judgeShellMinABI, judgeShellMinABI)
	}
	writes := uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV)
	attr := struct{ fs, net, scoped uint64 }{fs: writes, scoped: unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %v", errno)
	}
	defer unix.Close(int(fd))
	for _, dir := range judgeShellWritable {
		d, err := unix.Open(dir, unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
		if err != nil {
			continue // not in this sandbox: nothing to allow there
		}
		rule := unix.LandlockPathBeneathAttr{Allowed_access: writes, Parent_fd: int32(d)}
		_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
		unix.Close(d)
		if errno != 0 {
			return fmt.Errorf("landlock_add_rule %s: %v", dir, errno)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %v", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno == unix.E2BIG {
		// Already 16 domains deep (the kernel's most), a judge's shell in a judge's shell in
		// ...: only a judge's shells make domains in its container, and what an unconfined
		// process could do with 16 of its own it could do without them, so this process is
		// in the judge's domain already, for good.
		return nil
	} else if errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %v", errno)
	}
	return nil
}
