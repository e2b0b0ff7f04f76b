package importer

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Where a Harbor task's files live in its one container, and where ceval puts them: the
// agent's working directory (the Dockerfile's WORKDIR) is ceval's /workspace; the tests,
// which Harbor copies to /tests after the agent, are grader_files at /task/tests in a
// verifier container; the reward directory /logs/verifier is under the verifier's writable
// /tmp (its rootfs is read-only).
const (
	harborTests      = "/tests"
	harborLogs       = "/logs/verifier"
	cevalHarborTests = "/task/tests"
	cevalHarborLogs  = "/tmp/logs/verifier"
	cevalWorkspace   = "/workspace"
)

// harborVerifierCommand runs tests/test.sh in the verifier container and prints the reward
// it wrote (reward.txt's first line, else reward.json's "reward") as the score: the script's
// own output goes to stderr, so only the reward can be read as the score.
const harborVerifierCommand = `mkdir -p ` + cevalHarborLogs + ` && cd ` + cevalWorkspace + ` && ` +
	`if command -v bash >/dev/null; then bash ` + cevalHarborTests + `/test.sh >&2; else sh ` + cevalHarborTests + `/test.sh >&2; fi; ` +
	`r=` + cevalHarborLogs + `; ` +
	`if [ -s $r/reward.txt ]; then head -n 1 $r/reward.txt; ` +
	`elif [ -s $r/reward.json ]; then sed -n 's/.*"reward"[[:space:]]*:[[:space:]]*\([0-9.eE+-]*\).*/\1/p' $r/reward.json | head -n 1; ` +
	`else echo "tests/test.sh wrote no reward.txt or reward.json" >&2; echo 0; fi`

// dockerWorkdir is the last absolute WORKDIR of a Dockerfile ("" when none or "/").
func dockerWorkdir(dockerfile []byte) string {
	wd := ""
	sc := bufio.NewScanner(bytes.NewReader(dockerfile))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && strings.EqualFold(f[0], "WORKDIR") && strings.HasPrefix(f[1], "/") {
			wd = filepath.Clean(strings.Trim(f[1], `"`))
		}
	}
	if wd == "/" {
		return ""
	}
	return wd
}

// replacePath replaces the absolute path old in line by new wherever it stands as a whole
// path or a path's leading directories (/app, /app/x; not /apps or /x/app).
func replacePath(line, old, new string) (string, bool) {
	var b strings.Builder
	changed := false
	for {
		i := strings.Index(line, old)
		if i < 0 {
			b.WriteString(line)
			return b.String(), changed
		}
		end := i + len(old)
		before := i == 0 || !isPathByte(line[i-1])
		after := end == len(line) || line[end] == '/' || !isPathByte(line[end]) ||
			line[end] == '.' && (end+1 == len(line) || !isPathByte(line[end+1])) // a sentence's full stop
		b.WriteString(line[:i])
		if before && after {
			b.WriteString(new)
			changed = true
		} else {
			b.WriteString(old)
		}
		line = line[end:]
	}
}

func isPathByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-/~$", c) >= 0
}

// rewriteHarborPaths rewrites, in the copied files under dst (rels: files or directories),
// each Harbor container path to where ceval has it; every line changed is a note at the
// input's FILE:LINE. Files over maxInput or with a NUL byte (binaries) are left alone.
func rewriteHarborPaths(src, dst string, rels []string, paths [][2]string) ([]Problem, error) {
	var problems []Problem
	for _, rel := range rels {
		err := filepath.WalkDir(filepath.Join(dst, rel), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if !d.Type().IsRegular() {
				return nil
			}
			info, err := d.Info()
			if err != nil || info.Size() > maxInput {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil || bytes.IndexByte(data, 0) >= 0 {
				return err
			}
			fileRel, _ := filepath.Rel(dst, p)
			lines := strings.Split(string(data), "\n")
			changed := false
			for i, line := range lines {
				var what []string
				for _, pp := range paths {
					if l, ok := replacePath(line, pp[0], pp[1]); ok {
						line = l
						what = append(what, pp[0]+" -> "+pp[1])
					}
				}
				if len(what) > 0 {
					lines[i], changed = line, true
					problems = append(problems, Problem{File: filepath.Join(src, fileRel), Line: i + 1, Field: "path",
						Reason: fmt.Sprintf("rewritten in the copy: %s (where ceval has it)", strings.Join(what, ", "))})
				}
			}
			if !changed {
				return nil
			}
			return os.WriteFile(p, []byte(strings.Join(lines, "\n")), info.Mode().Perm())
		})
		if err != nil {
			return problems, err
		}
	}
	return problems, nil
}
