package importer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/task"
)

// TestImportHarborMapsTheTaskAndReportsTheTests imports the sample Harbor task: prompt,
// image from the Dockerfile, limits, tags and the oracle solution map; the tests (a verifier
// container ceval lacks) and the verifier's timeout are reported at their lines; with
// KeepUnmapped the output loads with a placeholder that always fails.
func TestImportHarborMapsTheTaskAndReportsTheTests(t *testing.T) {
	out := t.TempDir()
	rs, err := ImportHarbor([]string{"testdata/harbor/hello-file"}, out, Options{KeepUnmapped: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	want := map[string]int{"tests": 1, "verifier.timeout_sec": 10}
	for _, p := range r.Problems {
		if line, ok := want[p.Field]; ok && p.Unmapped && p.Line == line {
			delete(want, p.Field)
		}
	}
	if len(want) > 0 || r.Unmapped() != 2 {
		t.Fatalf("not reported as expected: %v; %v", want, r.Problems)
	}
	if r.Invalid != nil {
		t.Fatalf("output does not load: %v", r.Invalid)
	}
	tk, err := task.Load(r.Output)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if tk.ID != "hello-file" || !strings.Contains(tk.Prompt, "Hello, world!") || tk.Sandbox.Image != "harbor/hello-file:latest" ||
		tk.Sandbox.Limits.Timeout != 120*time.Second || tk.Sandbox.Limits.MemoryMB != 512 || tk.Sandbox.Limits.DiskMB != 64 {
		t.Fatalf("task %+v", tk)
	}
	if tk.Solution == nil || tk.Solution.Script == nil || len(tk.Criteria) != 1 || tk.Criteria[0].Type != task.RunCommand {
		t.Fatalf("solution %+v criteria %+v", tk.Solution, tk.Criteria)
	}
	// without the placeholder the task has no criteria: invalid, not silently passing
	rs, err = ImportHarbor([]string{"testdata/harbor/hello-file"}, t.TempDir(), Options{})
	if err != nil || rs[0].Invalid == nil || rs[0].OK() {
		t.Fatalf("without --keep-unmapped: %v %+v", err, rs)
	}
}

func TestImportHarborReportsWhatItCannotRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "odd")
	writeFile(t, filepath.Join(dir, "task.toml"), "version = \"1.0\"\n[agent]\ntimeout_sec = 10\nthis is not toml\n[environment]\ngpus = 1\n")
	writeFile(t, filepath.Join(dir, "instruction.md"), "do it")
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	rs, err := ImportHarbor([]string{dir}, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, p := range rs[0].Problems {
		if p.Unmapped {
			got[p.Field] = p.Line
		}
	}
	if got["task.toml"] != 4 || got["environment.gpus"] != 6 || got["tests"] != 1 {
		t.Fatalf("problems %v", rs[0].Problems)
	}
	if _, ok := got["file"]; !ok {
		t.Fatalf("the link was not reported: %v", rs[0].Problems)
	}
	if _, err := os.Lstat(filepath.Join(out, "odd", "leak.txt")); !os.IsNotExist(err) {
		t.Fatalf("the link was copied: %v", err)
	}
}
