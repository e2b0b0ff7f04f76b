package verifier

import (
	"os"
	"path/filepath"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/task"
)

// An image whose CPython keeps its encodings package only as bytecode (the legacy layout:
// encodings/__init__.pyc and its codecs compiled with compileall -b, the sources removed)
// gets the Python start guard too: ceval binds over the package a copy of its files with a
// guarded __init__.py that runs the image's __init__.pyc. The agent plants json.py; a check
// under python3 -S (no site, so no other hook) that imports json from the workspace-first
// sys.path scores 1 only if the agent's json answered: 0 with the guard, and python3 itself
// still starts and encodes. Red without the bytecode-only rule: the criterion scores 1 and
// the details name the CPython as unguarded.
func TestVerifierGuardsABytecodeOnlyStandardLibrary(t *testing.T) {
	if os.Getenv("CEVAL_SKIP_PACKAGE_IMAGES") != "" {
		t.Skip("CEVAL_SKIP_PACKAGE_IMAGES is set")
	}
	e, cl, ctx := newExecutor(t)
	const base = "ceval.local/test-harbor-python3-bookworm:1"
	if _, err := images.BuildPackages(ctx, cl, images.PackageOptions{Name: base, Suite: "bookworm", Packages: []string{"python3", "bash"}}); err != nil {
		t.Fatalf("the image with python3: %v", err)
	}
	const image = "ceval.local/test-python3-sourceless-encodings:1"
	df := filepath.Join(t.TempDir(), "Dockerfile")
	if err := os.WriteFile(df, []byte("FROM "+base+"\nRUN cd /usr/lib/python3.11 && python3 -m compileall -q -b encodings && rm -rf encodings/*.py encodings/__pycache__ && ls encodings | head -3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := images.BuildDockerfile(ctx, cl, images.DockerfileOptions{Name: image, Dockerfile: df, Log: testLog{t}}); err != nil {
		t.Fatalf("the image whose encodings is bytecode only: %v", err)
	}
	dir := t.TempDir()
	doc := "task_id: sourceless\ninitial_prompt: p\nsandbox:\n  image: " + image + "\nsuccess_criteria:\n" +
		"  - {type: run_command, sandbox: container, timeout: 60s, command: \"cd /workspace && python3 -S -c 'import sys; sys.path.insert(0, \\\"/workspace\\\"); import json; print(\\\"é\\\".encode()); sys.exit(0 if json.loads(\\\"1\\\") == 2 else 1)'\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "task.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := snap(t, map[string]string{"json.py": "def loads(s):\n    return 2\n"})
	c := &tk.Criteria[0]
	r, err := e.Run(ctx, c, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	score, details, _ := scoreOf(c, r)
	if score != 0 || r.ExitCode != 1 {
		t.Errorf("score %v exit %d (%s): the agent's json answered under a bytecode-only standard library; stdout %s stderr %.2000s", score, r.ExitCode, details, r.Stdout, r.Stderr)
	}
	if string(r.Stdout) != "b'\\xc3\\xa9'\n" {
		t.Errorf("python3 did not start and encode as usual: stdout %q stderr %.2000s", r.Stdout, r.Stderr)
	}
}

// testLog writes a build's log to the test's.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("%s", p)
	return len(p), nil
}
