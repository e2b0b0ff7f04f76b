package main

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/ctrtest"
)

// The importer's conformance corpus (importer/testdata/conformance): each coder_eval case
// with a grade.txt is imported by the binary, then each line of grade.txt,
// "[ROW] WORKSPACE STATUS", grades WORKSPACE (a directory of the case, or "empty") with
// ceval grade (--row ROW for a dataset task) and wants STATUS: the imported task grades a
// solved workspace SUCCESS and an empty one FAILURE, with the host and WASM tiers only.
const conformanceCorpus = "../../importer/testdata/conformance/coder-eval"

// copyCaseInput copies a case without its want files, workspaces and grade.txt.
func copyCaseInput(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(dir))
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel != "." && (strings.HasPrefix(rel, "want.") || rel == "solved" || rel == "grade.txt") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestImportedConformanceTasksGradeSolvedAndEmptyWorkspaces(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join(conformanceCorpus, "*", "grade.txt"))
	if err != nil || len(cases) < 15 {
		t.Fatalf("%d graded cases (%v)", len(cases), err)
	}
	graded := 0
	for _, g := range cases {
		dir := filepath.Dir(g)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			in := copyCaseInput(t, dir)
			out := t.TempDir()
			r := ceval(t, "import", "coder-eval", "--out", out, in)
			taskFile := filepath.Join(out, filepath.Base(in), "task.yaml")
			if _, err := os.Stat(taskFile); err != nil {
				t.Fatalf("import wrote no task (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
			}
			f, err := os.Open(g)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				fields := strings.Fields(sc.Text())
				if len(fields) == 0 {
					continue
				}
				var row string
				if len(fields) == 3 {
					row, fields = fields[0], fields[1:]
				}
				ws, want := fields[0], fields[1]
				wsDir := t.TempDir()
				if ws != "empty" {
					wsDir = filepath.Join(dir, ws)
				}
				args := []string{"grade", "--json", "--containerd-address", "/nonexistent/containerd.sock", taskFile, "--workspace", wsDir}
				if row != "" {
					args = append(args, "--row", row)
				}
				r := ceval(t, args...)
				var res struct {
					Status   string `json:"status"`
					Criteria []struct {
						Type, Status, Details string
					} `json:"criteria"`
				}
				if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
					t.Fatalf("%s: exit %d, %v\n%s%s", sc.Text(), r.code, err, r.stdout, r.stderr)
				}
				if res.Status != want {
					t.Errorf("%s: %s, want %s: %+v", sc.Text(), res.Status, want, res.Criteria)
				}
				graded++
			}
		})
	}
	t.Logf("%d workspaces graded", graded)
}

// TestImportedHarborConformanceTasksGradeByTheirRewardAgainstContainerd: the Harbor cases
// with a grade.txt (reward.txt, reward.json) are imported and their solved and empty
// workspaces graded by ceval grade, the tests running in a verifier container: reward 1 (or
// named rewards whose mean is 1) is SUCCESS, reward 0 (or a mean of 0.5) FAILURE. The cases'
// Dockerfiles need a registry, so the imported tasks run in ceval's default image.
func TestImportedHarborConformanceTasksGradeByTheirRewardAgainstContainerd(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	cases, err := filepath.Glob("../../importer/testdata/conformance/harbor/*/grade.txt")
	if err != nil || len(cases) < 2 {
		t.Fatalf("%d graded Harbor cases (%v)", len(cases), err)
	}
	// The cases' Dockerfiles are a plain FROM busybox:1.36, which the import makes the task's
	// image (pulled when missing): the default image with bash (harbor_reward runs test.sh
	// with bash, as Harbor does) stands in for it under the name Docker normalises it to.
	const base = "docker.io/library/busybox:1.36"
	buildDefaultWithBash(t, ctx, c, base)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, base) })
	for _, g := range cases {
		dir := filepath.Dir(g)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			in := copyCaseInput(t, dir)
			os.Chmod(filepath.Join(in, "tests", "test.sh"), 0o755)
			out := t.TempDir()
			r := ceval(t, "import", "harbor", "--out", out, in)
			taskFile := filepath.Join(out, filepath.Base(in), "task.yaml")
			data, err := os.ReadFile(taskFile)
			if err != nil {
				t.Fatalf("import wrote no task (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
			}
			data = []byte(strings.Replace(string(data), "image: harbor/"+filepath.Base(in)+":latest", "image: "+base, 1))
			if err := os.WriteFile(taskFile, data, 0o644); err != nil {
				t.Fatal(err)
			}
			lines, err := os.ReadFile(g)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
				ws, want, _ := strings.Cut(line, " ")
				wsDir := t.TempDir()
				if ws != "empty" {
					wsDir = filepath.Join(dir, ws)
				}
				r := ceval(t, "grade", "--json", "--namespace", ctrtest.Namespace, taskFile, "--workspace", wsDir)
				var res struct {
					Status   string                             `json:"status"`
					Criteria []struct{ Status, Details string } `json:"criteria"`
				}
				if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
					t.Fatalf("%s: exit %d, %v\n%s%s", line, r.code, err, r.stdout, r.stderr)
				}
				if res.Status != want {
					t.Errorf("%s: %s, want %s: %+v\n%s", line, res.Status, want, res.Criteria, r.stderr)
				}
			}
		})
	}
}
