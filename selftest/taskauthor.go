package selftest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Attacks by a hostile task author rather than the agent: the task's own files reach for the
// host. They are blocked when ceval refuses the task (setup.refused) or serves and grades
// only what it validated.

// hostRepoSetup makes the template a repository that borrows the history of a repository
// elsewhere on the host (beside the task directory), whose HEAD's history holds the canary:
// by symlinking its objects/ (how "objects") or through alternates (a --shared clone). The
// template's working tree keeps only the base file; an agent mining git would find the
// canary if ceval ran host git over the template's .git.
func hostRepoSetup(how, refusal string) setup {
	return setup{needs: "git", refused: refusal, run: func(tmpl, canary string) error {
		if _, err := exec.LookPath("git"); err != nil {
			return errors.New("git is not installed on the host")
		}
		host := filepath.Dir(tmpl) + ".host-repo"
		if err := os.Mkdir(host, 0o700); err != nil {
			return err
		}
		git := func(dir string, args ...string) error {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = []string{"HOME=" + host, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
				"GIT_AUTHOR_NAME=ceval selftest", "GIT_AUTHOR_EMAIL=selftest@localhost",
				"GIT_COMMITTER_NAME=ceval selftest", "GIT_COMMITTER_EMAIL=selftest@localhost"}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
			}
			return nil
		}
		if err := os.WriteFile(filepath.Join(host, "answer.txt"), []byte("the answer is "+canary+"\n"), 0o600); err != nil {
			return err
		}
		for _, s := range [][]string{{"init", "-q", "--initial-branch=main"}, {"add", "."}, {"commit", "-q", "-m", "answer " + canary}} {
			if err := git(host, s...); err != nil {
				return err
			}
		}
		if err := os.Remove(tmpl); err != nil {
			return err
		}
		switch how {
		case "alternates":
			if err := git(filepath.Dir(tmpl), "clone", "-q", "--shared", host, tmpl); err != nil {
				return err
			}
		case "objects":
			if err := git(filepath.Dir(tmpl), "clone", "-q", "--no-local", host, tmpl); err != nil {
				return err
			}
			if err := os.RemoveAll(filepath.Join(tmpl, ".git", "objects")); err != nil {
				return err
			}
			if err := os.Symlink(filepath.Join(host, ".git", "objects"), filepath.Join(tmpl, ".git", "objects")); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown host repository scenario %q", how)
		}
		return os.Remove(filepath.Join(tmpl, "answer.txt")) // the answer is in the history only
	}}
}

// swapSetup races ceval as the task's author: once the task is validated and the run under
// way, each named piece of task material is swapped, at the run event given for it (just
// before ceval would use it), for a symlink to a host directory beside the task directory
// whose files hold the canary. ceval must serve and grade the material it validated, through
// the handles it opened at load.
func swapSetup(at map[string][]string) setup {
	return setup{race: func(event, taskDir, canary string) (bool, error) {
		host := taskDir + ".host"
		if _, err := os.Stat(host); errors.Is(err, fs.ErrNotExist) {
			if err := writeHostMaterial(host, canary); err != nil {
				return false, err
			}
		}
		for _, name := range at[event] {
			p := filepath.Join(taskDir, name)
			if err := os.Rename(p, p+".validated"); err != nil {
				return false, err
			}
			if err := os.Symlink(filepath.Join(host, name), p); err != nil {
				return false, err
			}
		}
		for _, names := range at {
			for _, name := range names {
				if fi, err := os.Lstat(filepath.Join(taskDir, name)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					return false, nil
				}
			}
		}
		return true, nil
	}}
}

// writeHostMaterial writes, at host, task material whose every file holds the canary.
func writeHostMaterial(host, canary string) error {
	if err := os.Mkdir(host, 0o700); err != nil {
		return err
	}
	answer := `{"type":"message","content":[{"type":"text","text":"` + canary + `"}],"usage":{"input_tokens":1,"output_tokens":1}}`
	files := map[string]string{
		"reference/host.txt":       canary + "\n",
		"calls.jsonl":              `{"api":"anthropic","depth":0,"tools":true,"status":200,"content_type":"application/json","response":` + jsonString(answer) + "}\n",
		"kit/skills/leak/SKILL.md": "---\nname: leak\n---\n" + canary + "\n",
		"kit/commands/leak.md":     canary + "\n",
	}
	for name, content := range files {
		p := filepath.Join(host, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func jsonString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
