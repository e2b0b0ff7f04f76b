package selftest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// gitSetup builds, with the host's git, a template repository whose answer (holding the
// canary) sits where `git log --all` and friends would find it but HEAD's history does not
// reach: ceval must hand the agent HEAD's history only.
func gitSetup(scenario string) setup {
	return setup{needs: "git", run: func(dir, canary string) error { return buildGitTemplate(dir, scenario, canary) }}
}

func buildGitTemplate(dir, scenario, canary string) error {
	if _, err := exec.LookPath("git"); err != nil {
		return errors.New("git is not installed on the host")
	}
	if scenario == "nested" { // a repository in a subdirectory of the template, not at its top
		sub := filepath.Join(dir, "project")
		if err := os.Mkdir(sub, 0o755); err != nil {
			return err
		}
		return buildGitTemplate(sub, "other-branch", canary)
	}
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
			"GIT_AUTHOR_NAME=ceval selftest", "GIT_AUTHOR_EMAIL=selftest@localhost",
			"GIT_COMMITTER_NAME=ceval selftest", "GIT_COMMITTER_EMAIL=selftest@localhost"}
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return out.String(), nil
	}
	write := func(name, content string) error {
		return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
	}
	answer := "the answer is " + canary + "\n"
	commitAnswer := [][]string{{"add", "answer.txt"}, {"commit", "-q", "-m", "answer " + canary}}
	var steps [][]string
	switch scenario {
	case "later-commit": // HEAD is detached at the parent of the branch's answer commit
		steps = append(commitAnswer, []string{"checkout", "-q", "HEAD~1"})
	case "other-branch":
		steps = append([][]string{{"checkout", "-q", "-b", "solution"}}, commitAnswer...)
		steps = append(steps, []string{"checkout", "-q", "main"})
	case "tag": // only an annotated tag reaches the answer
		steps = append(commitAnswer, []string{"tag", "-a", "v1", "-m", "answer " + canary}, []string{"reset", "-q", "--hard", "HEAD~1"})
	case "reflog": // only the reflog reaches the answer
		steps = append(commitAnswer, []string{"reset", "-q", "--hard", "HEAD~1"})
	case "stash":
		steps = [][]string{{"add", "answer.txt"}, {"stash", "push", "-q", "-m", "answer " + canary}}
	default:
		return fmt.Errorf("unknown git scenario %q", scenario)
	}
	if err := write("README.md", "A repository for ceval selftest.\n"); err != nil {
		return err
	}
	for _, s := range [][]string{{"init", "-q", "--initial-branch=main"}, {"add", "README.md"}, {"commit", "-q", "-m", "base"}} {
		if _, err := git(s...); err != nil {
			return err
		}
	}
	if err := write("answer.txt", answer); err != nil {
		return err
	}
	for _, s := range steps {
		if _, err := git(s...); err != nil {
			return err
		}
	}
	// The answer must really be in the repository, and nowhere in the working tree.
	all, err := git("log", "--all", "--reflog", "-p", "--format=%H %s%n%b")
	if err != nil {
		return err
	}
	if !strings.Contains(all, canary) {
		return fmt.Errorf("git scenario %s: the answer is not in the repository's history", scenario)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "answer.txt")); err == nil && bytes.Contains(data, []byte(canary)) {
		return fmt.Errorf("git scenario %s: the answer is in the working tree", scenario)
	}
	return nil
}
