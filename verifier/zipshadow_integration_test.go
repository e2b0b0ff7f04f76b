package verifier

import (
	"os"
	"path/filepath"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/task"
)

// The agent leaves zip archives holding an encodings package whose first line exits 0, the
// way a pass looks to a run_command: one a command puts on PYTHONPATH (deps.zip), and the
// python311.zip a PYTHONHOME of the workspace puts first on sys.path. Each check exits 1 when
// CPython starts from the image's own encodings (the Python start guard's), so it scores 1
// only if the agent's archive ran first. Over bookworm's python3 3.11 both score 0, the
// archives left out of the copy with a note. Red without the archive check: both 1.
func TestVerifierZipOfEncodingsOnPythonPathOrHomeNeverRuns(t *testing.T) {
	if os.Getenv("CEVAL_SKIP_PACKAGE_IMAGES") != "" {
		t.Skip("CEVAL_SKIP_PACKAGE_IMAGES is set")
	}
	e, cl, ctx := newExecutor(t)
	const image = "ceval.local/test-harbor-python3-bookworm:1"
	if _, err := images.BuildPackages(ctx, cl, images.PackageOptions{Name: image, Suite: "bookworm", Packages: []string{"python3", "bash"}}); err != nil {
		t.Fatalf("the image with python3: %v", err)
	}
	dir := t.TempDir()
	doc := "task_id: zip-encodings\ninitial_prompt: p\nsandbox:\n  image: " + image + "\nsuccess_criteria:\n" +
		"  - {type: run_command, sandbox: container, timeout: 60s, command: \"cd / && PYTHONPATH=/workspace/deps.zip python3 -c 'import sys; sys.exit(1)'\"}\n" +
		"  - {type: run_command, sandbox: container, timeout: 60s, command: \"cd / && PYTHONHOME=/workspace python3 -c 'import sys; sys.exit(1)'\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "task.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	win := "import posix\nposix._exit(0)\n"
	s := snap(t, map[string]string{
		"deps.zip":          zipOf(t, map[string]string{"encodings/__init__.py": win}),
		"lib/python311.zip": zipOf(t, map[string]string{"encodings/__init__.py": win}),
	})
	for i := range tk.Criteria {
		c := &tk.Criteria[i]
		r, err := e.Run(ctx, c, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		score, details, _ := scoreOf(c, r)
		if score != 0 {
			t.Errorf("%s: score %v (%s): the agent's archive ran before the guard", c.Spec.(*task.RunCommandSpec).Command, score, details)
		}
		t.Logf("%s: %v %s; notes %q", c.Spec.(*task.RunCommandSpec).Command, score, details, r.Notes)
	}
}
