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

// An ENTRYPOINT script that leaves a server running or changes the image's system files
// cannot be a setup step: the import lists it, with each reason at its FILE:LINE, and makes
// no step; one that only prepares the working directory becomes the step.
func TestImportHarborListsAnEntrypointThatCannotRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "server-task")
	files := map[string]string{
		"task.toml":                       "version = \"1.0\"\n",
		"instruction.md":                  "Query the local server.\n",
		"environment/Dockerfile":          "FROM ubuntu:24.04\nCOPY start.sh /usr/local/bin/start.sh\nENTRYPOINT [\"/usr/local/bin/start.sh\"]\nWORKDIR /app\n",
		"environment/start.sh":            "#!/bin/sh\n# start the fixture\necho 10.0.0.1 svc >> /etc/hosts\npython3 -m http.server 80 &\nexec \"$@\"\n",
		"environment/docker-compose.yaml": "services:\n  main:\n    build: .\n  db:\n    image: postgres\n    expose: [\"5432\"]\n",
		"tests/test.sh":                   "echo 1 > /logs/verifier/reward.txt\n",
	}
	for p, c := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644)
	}
	rs, err := ImportHarbor([]string{dir}, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rs[0].Problems {
		if p.Unmapped {
			got = append(got, p.String())
		}
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		"Dockerfile:3: unmapped: ENTRYPOINT: /usr/local/bin/start.sh cannot run in ceval",
		"start.sh:3 changes the image's system files or needs root (echo 10.0.0.1 svc >> /etc/hosts)",
		"start.sh:4 starts a process that keeps running (python3 -m http.server 80 &)",
		"docker-compose.yaml:3: unmapped: services.main.build",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("unmapped lines lack %q:\n%s", want, all)
		}
	}
	tk, err := task.Load(rs[0].Output)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if len(tk.Setup) != 0 {
		t.Errorf("an ENTRYPOINT that cannot run became setup %+v", tk.Setup)
	}
}
