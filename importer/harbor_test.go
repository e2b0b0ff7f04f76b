package importer

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/task"
)

// TestImportHarborMapsTheTaskAndItsTests imports the sample Harbor task: prompt, image from
// the Dockerfile, limits, tags and the oracle solution map; tests/ becomes grader_files and
// a verifier-container run_command scored by the reward, with the verifier's timeout; the
// container paths in the copied files (/app, the WORKDIR; /tests; /logs/verifier) are
// rewritten to ceval's, each a note at its FILE:LINE. Nothing is unmapped.
func TestImportHarborMapsTheTaskAndItsTests(t *testing.T) {
	out := t.TempDir()
	rs, err := ImportHarbor([]string{"testdata/harbor/hello-file"}, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if !r.OK() {
		t.Fatalf("not OK: invalid %v; %v", r.Invalid, r.Problems)
	}
	notes := map[string]bool{}
	for _, p := range r.Problems {
		if p.Field == "path" {
			notes[filepath.Base(p.File)+":"+strconv.Itoa(p.Line)] = true
		}
	}
	for _, at := range []string{"test.sh:4", "test.sh:5", "solve.sh:2", "instruction.md:1"} {
		if !notes[at] {
			t.Errorf("no rewrite note at %s: %v", at, r.Problems)
		}
	}
	tk, err := task.Load(r.Output)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if tk.ID != "hello-file" || !strings.Contains(tk.Prompt, "/workspace/hello.txt") || tk.Sandbox.Image != "debian:bookworm-slim" ||
		tk.Sandbox.Limits.Timeout != 120*time.Second || tk.Sandbox.Limits.MemoryMB != 512 || tk.Sandbox.Limits.DiskMB != 64 {
		t.Fatalf("task %+v", tk)
	}
	if tk.Solution == nil || tk.Solution.Script == nil || len(tk.Criteria) != 1 {
		t.Fatalf("solution %+v criteria %+v", tk.Solution, tk.Criteria)
	}
	c := tk.Criteria[0]
	if c.Type != task.RunCommand || c.Tier() != task.TierContainer || !c.Spec.(*task.RunCommandSpec).HarborReward || c.StdoutScoring().ScoreFromStdout || c.Execution().Timeout != 60*time.Second ||
		len(c.Execution().GraderFiles) != 1 || c.Execution().GraderFiles[0].Rel != "tests" || !c.Execution().GraderFiles[0].Dir {
		t.Fatalf("criterion %+v", c)
	}
	script, err := os.ReadFile(filepath.Join(out, "hello-file", "tests", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "if cmp -s /task/tests/expected.txt /workspace/hello.txt; then"; !strings.Contains(string(script), want) ||
		strings.Contains(string(script), " /logs/verifier") {
		t.Fatalf("test.sh not rewritten:\n%s", script)
	}
	// the original is untouched
	if orig, _ := os.ReadFile("testdata/harbor/hello-file/tests/test.sh"); !strings.Contains(string(orig), "/app/hello.txt") {
		t.Fatal("the input was rewritten")
	}
}

// TestImportHarborReportsATaskWithoutTests: no tests/test.sh is unmapped at FILE:LINE,
// and with KeepUnmapped the task keeps a placeholder that always fails.
func TestImportHarborReportsATaskWithoutTests(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "untested")
	writeFile(t, filepath.Join(dir, "task.toml"), "version = \"1.0\"\n[verifier]\nenv = { TOKEN = \"${HOST_TOKEN}\", MODE = \"strict\" }\n")
	writeFile(t, filepath.Join(dir, "instruction.md"), "do it")
	rs, err := ImportHarbor([]string{dir}, t.TempDir(), Options{KeepUnmapped: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, p := range rs[0].Problems {
		if p.Unmapped {
			got[p.Field] = p.Line
		}
	}
	if got["tests"] != 1 || got["verifier.env.TOKEN"] != 3 || got["verifier.env.MODE"] != 0 || rs[0].Invalid != nil {
		t.Fatalf("problems %v, invalid %v", rs[0].Problems, rs[0].Invalid)
	}
	rs, err = ImportHarbor([]string{dir}, t.TempDir(), Options{})
	if err != nil || rs[0].Invalid == nil || rs[0].OK() {
		t.Fatalf("without --keep-unmapped: %v %+v", err, rs)
	}
}

func TestReplacePathTakesWholePathsOnly(t *testing.T) {
	for in, want := range map[string]string{
		"cat /app/x /app":        "cat /workspace/x /workspace",
		"cd /app && ls /apps":    "cd /workspace && ls /apps",
		"/x/app /app2 $HOME/app": "/x/app /app2 $HOME/app",
		`open("/app/a.txt")`:     `open("/workspace/a.txt")`,
		"write to /app.":         "write to /workspace.",
		"/app.bak":               "/app.bak",
	} {
		if got, _ := replacePaths(in, [][2]string{{"/app", "/workspace"}}); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

// Each path is rewritten once, from the original text: under WORKDIR /tmp, /logs/verifier went
// to /tmp/logs/verifier and on to /workspace/logs/verifier; under /task, /tests to /task/tests
// and on to /workspace/tests (issue 40).
func TestHarborPathsAreRewrittenOnceWhateverTheWorkdir(t *testing.T) {
	const line = "cd WD && pytest /tests/test_outputs.py > /logs/verifier/out; cat WD/in.txt /tmp/x"
	for _, tc := range []struct{ workdir, want string }{
		{"/app", "cd /workspace && pytest /task/tests/test_outputs.py > /tmp/logs/verifier/out; cat /workspace/in.txt /tmp/x"},
		{"/tmp", "cd /workspace && pytest /task/tests/test_outputs.py > /tmp/logs/verifier/out; cat /workspace/in.txt /workspace/x"},
		{"/task", "cd /workspace && pytest /task/tests/test_outputs.py > /tmp/logs/verifier/out; cat /workspace/in.txt /tmp/x"},
		{"/", "cd / && pytest /task/tests/test_outputs.py > /tmp/logs/verifier/out; cat //in.txt /tmp/x"},
		{"/workspace", "cd /workspace && pytest /task/tests/test_outputs.py > /tmp/logs/verifier/out; cat /workspace/in.txt /tmp/x"},
	} {
		t.Run(tc.workdir, func(t *testing.T) {
			paths := harborPaths(dockerWorkdir([]byte("FROM ubuntu:24.04\nWORKDIR " + tc.workdir + "\n")))
			got, _ := replacePaths(strings.ReplaceAll(line, "WD", tc.workdir), paths)
			if got != tc.want {
				t.Errorf("WORKDIR %s:\n got %q\nwant %q", tc.workdir, got, tc.want)
			}
		})
	}
}

func TestReplacePathsPrefersTheLongestPathAtAPlace(t *testing.T) {
	got, what := replacePaths("ls /logs/verifier /logs/other", harborPaths("/logs"))
	if want := "ls /tmp/logs/verifier /workspace/other"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if len(what) != 2 {
		t.Errorf("rewrites %q, want /logs/verifier's and /logs'", what)
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

// A Dockerfile that only names its base (FROM, WORKDIR, comments) becomes that base as
// sandbox.image, which runs pull and pin; anything it builds keeps the build note.
func TestDockerBaseOnlyTakesAPlainFromAndWorkdir(t *testing.T) {
	cases := map[string]string{
		"FROM reg.example/t-bench/ubuntu-24-04:2024\nWORKDIR /app\n": "reg.example/t-bench/ubuntu-24-04:2024",
		"# base\n\nFROM ubuntu:24.04\n":                              "ubuntu:24.04",
		"FROM ubuntu:24.04\nRUN apt-get update\n":                    "",
		"FROM ubuntu:24.04 AS base\n":                                "",
		"FROM --platform=linux/amd64 ubuntu:24.04\n":                 "",
		"ARG B=ubuntu\nFROM $B\n":                                    "",
		"FROM a:1\nFROM b:2\n":                                       "",
		"FROM scratch\n":                                             "",
		"FROM ubuntu:24.04\nCOPY x /x\n":                             "",
	}
	for df, want := range cases {
		if got := dockerBaseOnly([]byte(df)); got != want {
			t.Errorf("dockerBaseOnly(%q) = %q, want %q", df, got, want)
		}
	}
}
