package verifier

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/task"
)

// A harbor_reward criterion runs Harbor's tests/test.sh, which runs the agent's code as the
// same user and then writes the reward. Nothing that code can do may forge the reward, so:
//
//   - The shell running test.sh is non-dumpable: it is an unreadable (mode 0111) copy of the
//     image's bash, and the kernel marks a process non-dumpable when it executes a file its
//     user cannot read. Its children (pytest, the agent's code) cannot read or write its
//     memory, open its file descriptors or read its environment, so they cannot change what
//     it writes; they can only kill it, which fails the criterion.
//   - The reward is written to a directory only that shell can name: a fresh directory under
//     a host-owned directory it can search but not list, by a random name the shell takes
//     from its environment and drops before test.sh runs. The shell holds it as descriptor
//     10, close-on-exec (bash's own save of descriptor 9 around test.sh), and
//     /tmp/logs/verifier/reward.txt and reward.json are links to /proc/self/fd/10/...:
//     they reach that directory in the shell and in the redirections it makes, never in a
//     program it starts (there descriptor 10 is not that directory). A program of the tests
//     can remove the links, which leaves the shell's reward unwritten (score 0), never
//     written by anyone else. The rest of /tmp/logs/verifier is an ordinary directory.
//   - ceval reads the reward on the host once every process of the container is gone, so
//     nothing writes it late; stdout, which any process could write to, is not read for it.

// harborRewardEnv carries the reward directory's path to the shell, which unsets it.
const harborRewardEnv = "CEVAL_HARBOR_REWARD"

// harborHidden is the host-owned directory, in the verifier's home, that holds the reward
// directory: mode 0111, so the tests' processes can pass through it but not list it.
const harborHidden = ".ceval-reward"

// harborStarted is the file the shell (or the isolated pytest's test process) writes in the
// reward directory once its checks passed, before any of the task's code runs: without it the
// command never started, on ceval's or the task's side (no bash, a kernel that left the copy
// readable), which is an error, never the agent's doing. Nothing else can write it.
const harborStarted = ".ceval-started"

// maxRewardBytes caps what ceval reads of reward.txt or reward.json.
const maxRewardBytes = 64 << 10

// harborSetup runs as /bin/sh -c before any of the task's code: it makes the unreadable
// copy of the image's bash (Harbor runs test.sh with bash) and executes it on harborShell
// with the criterion's command.
const harborSetup = `b=$(command -v bash) || { echo "harbor_reward: the image has no bash to run tests/test.sh with (Harbor runs it with bash)" >&2; exit 1; }
d=$(mktemp -d /tmp/.ceval-bash.XXXXXX) && cp "$b" "$d/bash" && chmod 0111 "$d/bash" || exit 1
exec "$d/bash" -c "$1" "$0" "$2"`

// harborShell runs in the non-dumpable bash: it checks that a program it starts can read
// neither it nor the reward directory, links the reward files to descriptor 10 and runs the
// command with descriptor 9 (the reward directory) saved close-on-exec as 10 and closed
// as 9.
const harborShell = `p=$` + harborRewardEnv + `; unset ` + harborRewardEnv + `; c=$1; set --
if cat /proc/$$/environ >/dev/null 2>&1; then echo "harbor_reward: a program this shell starts can read it (the unreadable copy of bash did not make it non-dumpable); not run" >&2; exit 1; fi
l=` + task.HarborLogs + `
rm -rf "${l%/*}" && mkdir -p "$l" && ln -s /proc/self/fd/10/reward.txt "$l/reward.txt" && ln -s /proc/self/fd/10/reward.json "$l/reward.json" || exit 1
exec 9<"$p" || exit 1
cd ` + oci.WorkspacePath + ` || exit 1
{ [ /proc/self/fd/10 -ef "$p" ] || { echo "harbor_reward: bash did not save the reward directory as descriptor 10; not run" >&2; exit 1; }
if ls /proc/self/fd/10/. >/dev/null 2>&1; then echo "harbor_reward: a program this shell starts inherits the reward directory; not run" >&2; exit 1; fi
: > /proc/self/fd/10/` + harborStarted + `
p=; (eval "$c"); } 9<&- </dev/null`

// harborArgv is the verifier container's command line for a harbor_reward criterion.
func harborArgv(command string) []string {
	return []string{"/bin/sh", "-c", harborSetup, "/task/tests/test.sh", harborShell, command}
}

// harborDir is a harbor_reward run's reward directory on the host.
type harborDir struct {
	name   string // random
	hidden string // home/.ceval-reward
	dir    string // hidden/name
	env    string // CEVAL_HARBOR_REWARD=<its path in the container>
}

// newHarborDir names a reward directory by 128 random bits; make creates it.
func newHarborDir() (*harborDir, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	name := hex.EncodeToString(b)
	return &harborDir{name: name, env: harborRewardEnv + "=" + path.Join(oci.HomePath, harborHidden, name)}, nil
}

// make creates the reward directory in the verifier's home (host path home) before the
// home is handed to the container's user.
func (h *harborDir) make(home string) error {
	h.hidden = filepath.Join(home, harborHidden)
	h.dir = filepath.Join(h.hidden, h.name)
	if err := os.RemoveAll(h.hidden); err != nil {
		return err
	}
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		return fmt.Errorf("harbor reward directory: %w", err)
	}
	return nil
}

// seal gives the hidden directory back to ceval's own user, search-only: the container's
// user (the owner of everything else in the home) can pass through it, not list it, and
// cannot chmod it.
func (h *harborDir) seal() error {
	if err := os.Lchown(h.hidden, os.Getuid(), os.Getgid()); err != nil {
		return fmt.Errorf("harbor reward directory: %w", err)
	}
	if err := os.Chmod(h.hidden, 0o111); err != nil {
		return fmt.Errorf("harbor reward directory: %w", err)
	}
	return nil
}

// read returns the reward test.sh's shell wrote (reward.txt's first line, else reward.json
// whole) and the file it came from; nil when it wrote neither. Only regular files are read,
// without following links.
func (h *harborDir) read() ([]byte, string, error) {
	root, err := os.OpenRoot(h.dir)
	if err != nil {
		return nil, "", fmt.Errorf("harbor reward directory: %w", err)
	}
	defer root.Close()
	for _, name := range []string{"reward.txt", "reward.json"} {
		f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, name, fmt.Errorf("%s: %w", name, err)
		}
		data, err := readRegular(f, name, maxRewardBytes)
		if err != nil {
			return nil, name, err
		}
		if name == "reward.txt" {
			line, _, _ := strings.Cut(string(data), "\n")
			if strings.TrimSpace(line) == "" {
				continue
			}
			return []byte(line), name, nil
		}
		if strings.TrimSpace(string(data)) == "" {
			continue
		}
		return data, name, nil
	}
	return nil, "", nil
}

// started reports whether the shell or test process wrote harborStarted.
func (h *harborDir) started() bool {
	fi, err := os.Lstat(filepath.Join(h.dir, harborStarted))
	return err == nil && fi.Mode().IsRegular()
}

// readReport reads the JUnit report an isolated pytest wrote there (nil when none).
func (h *harborDir) readReport() ([]byte, error) {
	root, err := os.OpenRoot(h.dir)
	if err != nil {
		return nil, fmt.Errorf("pytest's report: %w", err)
	}
	defer root.Close()
	f, err := root.OpenFile("junit.xml", os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pytest's report: %w", err)
	}
	return readRegular(f, "pytest's report", maxReportBytes)
}

func readRegular(f *os.File, name string, max int) ([]byte, error) {
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > max {
		return nil, fmt.Errorf("%s is over %d bytes", name, max)
	}
	return data, nil
}

// scoreHarbor scores a harbor_reward run: a limit or a test.sh killed by a signal fails it,
// its exit status is otherwise ignored (as Harbor does), and the score is the reward its
// shell wrote, strictly parsed (grader.ScoreCommand's score_from_stdout rules).
func scoreHarbor(c *task.RunCommandSpec, r *Run) (grader.Scored, error) {
	tail := func() string {
		s := "" // the output's tail is the details' end (grader.Scored.Output), as for every criterion
		if len(r.Notes) > 0 {
			s += "; " + strings.Join(r.Notes, "; ")
		}
		return s
	}
	switch {
	case r.Limit != "":
		return grader.Scored{Details: r.Limit + tail()}, nil
	case r.ExitCode > 128:
		return grader.Scored{Details: fmt.Sprintf("tests/test.sh was killed by signal %d (exit status %d), it did not end by itself: its reward is not counted%s", r.ExitCode-128, r.ExitCode, tail())}, nil
	case r.RewardErr != "":
		return grader.Scored{Details: "the reward is not counted: " + r.RewardErr + tail()}, nil
	case r.Reward == nil:
		return grader.Scored{Details: fmt.Sprintf("tests/test.sh's shell wrote no reward.txt or reward.json to %s (exit status %d): score 0; only what its own shell writes counts (echo 1 > %s/reward.txt), not a file a program it runs writes there%s", task.HarborLogs, r.ExitCode, task.HarborLogs, tail())}, nil
	}
	cc := task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true, RewardKey: c.RewardKey, ExpectedExitCode: r.ExitCode}}}
	sc, err := grader.ScoreCommand(&cc, grader.CommandRun{ExitCode: r.ExitCode, Stdout: r.Reward, Stderr: r.Stderr, Notes: r.Notes})
	sc.Details = strings.Replace(sc.Details, "score_from_stdout: the first line of stdout", "the first line of "+r.RewardFile, 1)
	sc.Details = strings.Replace(sc.Details, "from stdout", "from "+r.RewardFile, 1)
	return sc, err
}
