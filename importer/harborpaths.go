package importer

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"ceval.dev/ceval/task"
)

// Where a Harbor task's files live in its one container, and where ceval puts them: the
// agent's working directory (the Dockerfile's WORKDIR) is ceval's /workspace; the tests,
// which Harbor copies to /tests after the agent, are grader_files at /task/tests in a
// verifier container; the reward directory /logs/verifier is under the verifier's /tmp,
// writable whoever the verifier runs as (its root is read-only on a rootless daemon).
const (
	harborTests      = "/tests"
	harborLogs       = "/logs/verifier"
	cevalHarborTests = "/task/tests"
	cevalHarborLogs  = task.HarborLogs
	cevalWorkspace   = "/workspace"
)

// HarborVerifierCommand is the command of an imported Harbor task's criterion, a
// run_command with harbor_reward (package verifier says how that keeps the agent's code
// from writing the reward): tests/test.sh, run in the verifier's non-dumpable bash.
const HarborVerifierCommand = `. ` + cevalHarborTests + `/test.sh`

// dockerBaseOnly returns the image of a Dockerfile that builds nothing over it: one plain
// FROM (no stage name, platform or build argument) and otherwise only WORKDIR lines,
// comments and blank lines. "" for any other Dockerfile.
func dockerBaseOnly(dockerfile []byte) string {
	base := ""
	sc := bufio.NewScanner(bytes.NewReader(dockerfile))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		switch {
		case strings.EqualFold(f[0], "WORKDIR") && len(f) == 2:
		case strings.EqualFold(f[0], "FROM") && len(f) == 2 && base == "" && !strings.Contains(f[1], "$") && !strings.HasPrefix(f[1], "-"):
			base = f[1]
		default:
			return ""
		}
	}
	if strings.EqualFold(base, "scratch") {
		return ""
	}
	return base
}

// dockerWorkdir is the last absolute WORKDIR of a Dockerfile ("" when none or "/").
func dockerWorkdir(dockerfile []byte) string { return readDockerfile(dockerfile).workdir }

// harborPaths maps each Harbor container path to where ceval has it, for a task whose
// Dockerfile's WORKDIR is workdir ("" when none).
func harborPaths(workdir string) [][2]string {
	paths := [][2]string{{harborLogs, cevalHarborLogs}, {harborTests, cevalHarborTests}}
	if workdir != "" && workdir != cevalWorkspace {
		paths = append(paths, [2]string{workdir, cevalWorkspace})
	}
	return paths
}

// replacePaths replaces, in one pass over line, each old path of paths by its new wherever it
// stands as a whole path or a path's leading directories (/app, /app/x; not /apps or /x/app),
// the longest old first where two start at the same byte. A replacement is never scanned again,
// so one path's new never becomes another's old (/tests -> /task/tests under WORKDIR /task).
// It returns the rewrites made, each "old -> new" once.
func replacePaths(line string, paths [][2]string) (string, []string) {
	var b strings.Builder
	var what []string
	done := map[string]bool{}
	for i := 0; i < len(line); {
		best := -1
		if i == 0 || !isPathByte(line[i-1]) {
			for k, pp := range paths {
				if wholePathAt(line, i, pp[0]) && (best < 0 || len(pp[0]) > len(paths[best][0])) {
					best = k
				}
			}
		}
		if best < 0 {
			b.WriteByte(line[i])
			i++
			continue
		}
		pp := paths[best]
		b.WriteString(pp[1])
		i += len(pp[0])
		if w := pp[0] + " -> " + pp[1]; !done[w] {
			done[w] = true
			what = append(what, w)
		}
	}
	if len(what) == 0 {
		return line, nil
	}
	return b.String(), what
}

// wholePathAt reports whether old stands at line[i:] followed by the end of the path, a "/" or
// a sentence's full stop.
func wholePathAt(line string, i int, old string) bool {
	if !strings.HasPrefix(line[i:], old) {
		return false
	}
	end := i + len(old)
	return end == len(line) || line[end] == '/' || !isPathByte(line[end]) ||
		line[end] == '.' && (end+1 == len(line) || !isPathByte(line[end+1]))
}

func isPathByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-/~$", c) >= 0
}

// walkTextFiles calls fn with each regular file below root (none when root is missing), its
// mode and its bytes, skipping files over maxInput and binaries (a NUL byte): the text a Harbor
// import reads or rewrites. Links are never followed.
func walkTextFiles(root string, fn func(path string, mode fs.FileMode, data []byte) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
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
		return fn(p, info.Mode(), data)
	})
}

// rewriteHarborPaths rewrites, in the copied files under dst (rels: files or directories),
// each Harbor container path to where ceval has it; every line changed is a note at the
// input's FILE:LINE. Files over maxInput or with a NUL byte (binaries) are left alone.
func rewriteHarborPaths(src, dst string, rels []string, paths [][2]string) ([]Problem, error) {
	var problems []Problem
	for _, rel := range rels {
		err := walkTextFiles(filepath.Join(dst, rel), func(p string, mode fs.FileMode, data []byte) error {
			fileRel, _ := filepath.Rel(dst, p)
			lines := strings.Split(string(data), "\n")
			changed := false
			for i, line := range lines {
				line, what := replacePaths(line, paths)
				if len(what) > 0 {
					lines[i], changed = line, true
					problems = append(problems, Problem{File: filepath.Join(src, fileRel), Line: i + 1, Field: "path",
						Reason: fmt.Sprintf("rewritten in the copy: %s (where ceval has it)", strings.Join(what, ", "))})
				}
			}
			if !changed {
				return nil
			}
			return os.WriteFile(p, []byte(strings.Join(lines, "\n")), mode.Perm())
		})
		if err != nil {
			return problems, err
		}
	}
	return problems, nil
}
