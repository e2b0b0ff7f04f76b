package importer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

func TestReadDockerfileFacts(t *testing.T) {
	f := readDockerfile([]byte("FROM debian\n# ENTRYPOINT [\"/not/this\"]\nWORKDIR /srv\nWORKDIR \"/app\"\nENV A=1 \\\n    B=\"two words\"\nENV C 3\n" +
		"ENTRYPOINT [\"/usr/local/bin/start.sh\", \"--data\", \"/app/my data\"]\n"))
	if f.workdir != "/app" || !slices.Equal(f.envKeys, []string{"A", "B", "C"}) || f.envLine != 5 {
		t.Errorf("facts %+v", f)
	}
	if f.entrypoint != `/usr/local/bin/start.sh --data '/app/my data'` || f.entrypointLine != 8 {
		t.Errorf("entrypoint %q at %d", f.entrypoint, f.entrypointLine)
	}
	if f := readDockerfile([]byte("FROM x\nENTRYPOINT exec server --port 80\n")); f.entrypoint != "exec server --port 80" {
		t.Errorf("shell form: %q", f.entrypoint)
	}
}

// The tests' absolute paths outside the WORKDIR and outside Harbor's and the system's
// directories become sandbox.outputs; a URL, /dev/null, /tests, /logs and the WORKDIR do not.
func TestHarborOutputsFromTheTestsPaths(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "tests"), 0o755)
	os.WriteFile(filepath.Join(dir, "tests", "test.sh"), []byte("curl -s https://astral.sh/uv/install.sh | sh\npytest /tests/test_out.py > /logs/verifier/log 2>/dev/null\ncat /app/x\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "tests", "test_out.py"), []byte("import json\nP = \"/output/result.json\"\ndef test():\n    open('/tmp/scratch/a.txt')\n    assert json.load(open(P))\n    open(\"/usr/share/dict/words\")\n"), 0o644)
	outs, where, err := harborOutputs(dir, "/app")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(outs, []string{"/output", "/tmp"}) {
		t.Fatalf("outputs %q", outs)
	}
	if p := where["/output"]; filepath.Base(p.File) != "test_out.py" || p.Line != 2 || !strings.Contains(p.Reason, "/output/result.json") {
		t.Errorf("/output's note %+v", p)
	}
	// Under WORKDIR /tmp, /tmp is the workspace, not an output; under /tmp/work, /app and
	// /tmp/scratch are outside it.
	if outs, _, _ := harborOutputs(dir, "/tmp"); !slices.Equal(outs, []string{"/app", "/output"}) {
		t.Errorf("under WORKDIR /tmp: %q", outs)
	}
	if outs, _, _ := harborOutputs(dir, "/tmp/work"); !slices.Equal(outs, []string{"/app", "/output", "/tmp"}) {
		t.Errorf("under WORKDIR /tmp/work: %q", outs)
	}
}

// The import writes what it found: outputs, the ENTRYPOINT as a setup step, and the task
// still loads.
func TestImportHarborSetsOutputsAndEntrypointStep(t *testing.T) {
	out := t.TempDir()
	rs, err := ImportHarbor([]string{"testdata/harbor-causes/outputs-tmp-output", "testdata/harbor-causes/entrypoint"}, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if !r.OK() {
			t.Fatalf("%s not OK: %v %v", r.Input, r.Invalid, r.Problems)
		}
	}
	tk, err := task.Load(rs[0].Output)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if !slices.Equal(tk.Sandbox.Outputs, []string{"/output", "/tmp"}) {
		t.Errorf("outputs %q", tk.Sandbox.Outputs)
	}
	ep, err := task.Load(rs[1].Output)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if len(ep.Setup) != 1 || ep.Setup[0].Run != "/usr/local/bin/prepare.sh" || len(ep.Sandbox.Outputs) != 0 {
		t.Errorf("setup %+v outputs %q", ep.Setup, ep.Sandbox.Outputs)
	}
}
