package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

// TestImportCoderEvalExitCodes: 0 when every field mapped and the output validates, 1 with
// the FILE:LINE list when something did not, 2 without --out.
func TestImportCoderEvalExitCodes(t *testing.T) {
	out := t.TempDir()
	if r := ceval(t, "import", "coder-eval", "--out", out, "../../importer/testdata/coder-eval/full"); r.code != 0 || !strings.Contains(r.stdout, ": ok") {
		t.Fatalf("full fixture: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	src := filepath.Join(t.TempDir(), "t.yaml")
	body := "task_id: t1\ndescription: d\ninitial_prompt: p\nagent:\n  type: claude-code\nsuccess_criteria:\n  - type: file_exists\n    path: a\n  - type: uipath_eval\n"
	if err := os.WriteFile(src, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r := ceval(t, "import", "coder-eval", "--out", t.TempDir(), src)
	if r.code != 1 || !strings.Contains(r.stderr, src+":9: unmapped: success_criteria[1] (uipath_eval)") {
		t.Fatalf("unmapped criterion: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ceval(t, "import", "coder-eval", src); r.code != 2 {
		t.Fatalf("without --out: exit %d, want 2", r.code)
	}
}

// TestValidateRootWidensToTheDeclaredTreeOnly: a template two levels up is refused without
// --root and accepted with it; an experiment's root: .. needs the user's --root.
func TestValidateRootWidensToTheDeclaredTreeOnly(t *testing.T) {
	repo := t.TempDir()
	for _, d := range []string{"tasks/t", "skills/tm"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f := filepath.Join(repo, "tasks/t/task.yaml")
	body := "task_id: t\ninitial_prompt: p\nsandbox:\n  workspace:\n    template_dir: ../../skills/tm\nsuccess_criteria:\n  - type: file_exists\n    path: a\n"
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := ceval(t, "validate", f); r.code != 2 || !strings.Contains(r.stderr, f+":5:19:") {
		t.Fatalf("without --root: exit %d\n%s", r.code, r.stderr)
	}
	if r := ceval(t, "validate", "--root", repo, f); r.code != 0 {
		t.Fatalf("with --root: exit %d\n%s", r.code, r.stderr)
	}
	if r := ceval(t, "validate", "--root", filepath.Join(repo, "tasks"), f); r.code != 2 || !strings.Contains(r.stderr, "leaves the declared root") {
		t.Fatalf("a root that does not hold the template: exit %d\n%s", r.code, r.stderr)
	}
	if err := os.MkdirAll(filepath.Join(repo, "experiments"), 0o755); err != nil {
		t.Fatal(err)
	}
	exp := filepath.Join(repo, "experiments/exp.yaml")
	if err := os.WriteFile(exp, []byte("experiment_id: e\nroot: ..\ntasks: [../tasks/t/task.yaml]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := ceval(t, "validate", exp); r.code != 2 || !strings.Contains(r.stderr, "never widen it") {
		t.Fatalf("experiment root: .. without --root: exit %d\n%s", r.code, r.stderr)
	}
	for _, cmd := range []string{"validate", "plan"} {
		if r := ceval(t, cmd, "--root", repo, exp); r.code != 0 {
			t.Fatalf("%s experiment with --root: exit %d\n%s", cmd, r.code, r.stderr)
		}
	}
}

// TestImportedCoderEvalTaskRunsEndToEnd imports the runnable fixture, puts a command agent
// in place of its claude-code agent (one that writes the known solution, one that does
// nothing) and runs both against the real containerd: pass, then fail.
func TestImportedCoderEvalTaskRunsEndToEnd(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	out := t.TempDir()
	if r := ceval(t, "import", "coder-eval", "--out", out, "../../importer/testdata/coder-eval/runnable"); r.code != 0 {
		t.Fatalf("import: exit %d\n%s", r.code, r.stderr)
	}
	converted := filepath.Join(out, "runnable", "task.yaml")
	data, err := os.ReadFile(converted)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, script string
		code         int
	}{{"solution", "echo hello > hello.txt", exitOK}, {"nothing", "true", exitFailure}} {
		t.Run(tc.name, func(t *testing.T) {
			// the agent block is the converted claude-code one: swap in a command agent
			i := strings.Index(string(data), "agent:\n")
			j := strings.Index(string(data), "sandbox:\n")
			if i < 0 || j < i {
				t.Fatalf("unexpected output layout:\n%s", data)
			}
			body := string(data[:i]) + "agent:\n  type: command\n  command: [/bin/sh, -c, " + strconvQuote(tc.script) + "]\n" + string(data[j:])
			f := filepath.Join(filepath.Dir(converted), tc.name+".yaml")
			if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", t.TempDir(), f)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
		})
	}
}

func strconvQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

func TestSchemaTaskPrintsTheLoadersSchema(t *testing.T) {
	r := ceval(t, "schema", "task")
	var s map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &s) != nil || s["title"] != "ceval task file" {
		t.Fatalf("exit %d\n%.300s%s", r.code, r.stdout, r.stderr)
	}
	if r := ceval(t, "schema", "experiment"); r.code != 0 || !strings.Contains(r.stdout, "ceval experiment file") {
		t.Fatalf("experiment: exit %d", r.code)
	}
	if r := ceval(t, "schema", "config"); r.code != 0 || !strings.Contains(r.stdout, "ceval config file") {
		t.Fatalf("config: exit %d", r.code)
	}
	if r := ceval(t, "schema", "nonsense"); r.code != 2 {
		t.Fatalf("unknown format: exit %d", r.code)
	}
}

// TestRunExperimentWithTasksFromTheCommandLine: coder_eval's form, an experiment file
// without tasks: and the task files after it, with --exclude-tags leaving one out; run
// against the real containerd.
func TestRunExperimentWithTasksFromTheCommandLine(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "e.yaml"), []byte("experiment_id: e\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var tasks []string
	for _, id := range []string{"t1", "t2"} {
		body := "task_id: " + id + "\ntags: [" + id + "]\ninitial_prompt: p\nagent: {type: command, command: [/bin/sh, -c, 'echo a > a']}\nsuccess_criteria:\n  - type: file_exists\n    path: a\n"
		p := filepath.Join(dir, id+".yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, p)
	}
	r := ceval(t, append([]string{"plan", filepath.Join(dir, "e.yaml"), "--exclude-tags", "t2"}, tasks...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "t1") || strings.Contains(r.stdout, "t2.yaml") {
		t.Fatalf("plan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	runs := t.TempDir()
	r = ceval(t, append([]string{"run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, "--exclude-tags", "t2", filepath.Join(dir, "e.yaml")}, tasks...)...)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, _ := filepath.Glob(filepath.Join(runs, "*", "default", "*")); len(got) != 1 || filepath.Base(got[0]) != "t1" {
		t.Fatalf("runs: %v", got)
	}
}

// TestRunDatasetTaskRunsEachRow: a dataset task runs once per row against the real
// containerd, each row its own task (task_id.row): an agent that classifies right passes
// both rows, one that always answers positive fails row b.
func TestRunDatasetTaskRunsEachRow(t *testing.T) {
	dir := t.TempDir()
	rows := "{\"id\": \"a\", \"text\": \"great\", \"label\": \"positive\"}\n{\"id\": \"b\", \"text\": \"awful\", \"label\": \"negative\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "rows.jsonl"), []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	task := func(script string) string {
		p := filepath.Join(dir, "task.yaml")
		body := "task_id: classify\ninitial_prompt: \"Classify: ${row.text}\"\ndataset:\n  file: rows.jsonl\n" +
			"agent:\n  type: command\n  command: [/bin/sh, -c, " + strconvQuote(script) + "]\n" +
			"sandbox:\n  workspace:\n    starter_files:\n      - path: input.txt\n        content: \"${row.text}\"\n" +
			"success_criteria:\n  - type: classification_match\n    path: label.txt\n    expected_label: \"${row.label}\"\n"
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if r := ceval(t, "validate", task("true")); r.code != 0 || !strings.Contains(r.stdout, "dataset classify: 2 tasks") {
		t.Fatalf("validate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	runs := t.TempDir()
	right := "if grep -q great input.txt; then echo positive; else echo negative; fi > label.txt"
	if r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, task(right)); r.code != 0 {
		t.Fatalf("right agent: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, _ := filepath.Glob(filepath.Join(runs, "*", "default", "classify.*")); len(got) != 2 {
		t.Fatalf("run directories: %v", got)
	}
	if r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", t.TempDir(), task("echo positive > label.txt")); r.code != 1 {
		t.Fatalf("always-positive agent: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestImportedHarborTaskGradesByItsRewardAgainstContainerd imports the sample Harbor task and
// runs it (in the default image plus bash: the sample's Dockerfile needs a registry) under an
// agent that writes the solution and one that does nothing: the tests, run by the verifier
// container from the rewritten tests/test.sh, score 1 and 0 through the reward file.
func TestImportedHarborTaskGradesByItsRewardAgainstContainerd(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	const img = "ceval.local/test-import-harbor:1"
	buildDefaultWithBash(t, ctx, c, img)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, img) })
	out := t.TempDir()
	if r := ceval(t, "import", "harbor", "../../importer/testdata/harbor/hello-file", "--out", out); r.code != 0 {
		t.Fatalf("import: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	exp := filepath.Join(out, "exp.yaml")
	os.WriteFile(exp, []byte("experiment_id: harbor\ntasks: [hello-file/task.yaml]\nvariants:\n"+
		"  - variant_id: solver\n    agent: {type: command, command: [/bin/sh, -c, \"echo 'Hello, world!' > hello.txt\"]}\n"+
		"  - variant_id: idle\n    agent: {type: command, command: [/bin/true]}\n"), 0o644)
	runs := t.TempDir()
	r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, "-D", "sandbox.image="+img, exp)
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1 (idle fails)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	s := readSummary(t, onlyDir(t, runs))
	if s.Variants[0].VariantID != "solver" || s.Variants[0].Passed != 1 || s.Variants[1].Passed != 0 || s.Variants[1].Runs != 1 {
		t.Fatalf("summary %+v", s.Variants)
	}
	res, err := os.ReadFile(filepath.Join(onlyDir(t, runs), "idle", "hello-file", "1", "result.json"))
	if err != nil || !strings.Contains(string(res), "score 0 from reward.txt") {
		t.Fatalf("idle's criterion was not scored by the reward: %v\n%s", err, res)
	}
}

// TestImportedCoderEvalPythonChecksGradeInWASM imports the Python coder_eval fixture and
// grades two workspaces: import_check (a Python check in WASM) scores the share of imports
// that resolve, and the run_command reads its check script from the grader files at
// $TASK_DIR; the pytest criterion needs a verifier container (NOT_GRADED without containerd).
func TestImportedCoderEvalPythonChecksGradeInWASM(t *testing.T) {
	out := t.TempDir()
	if r := ceval(t, "import", "coder-eval", "--out", out, "../../importer/testdata/coder-eval/python"); r.code != 0 {
		t.Fatalf("import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	taskFile := filepath.Join(out, "python", "task.yaml")
	for _, tc := range []struct {
		name, stats string
		importScore float64
		checkPassed bool
	}{
		{"right", "import math\n\ndef mean(xs):\n    return math.fsum(xs) / len(xs)\n", 1, true},
		{"wrong", "import math\nimport no_such_module\n\ndef mean(xs):\n    return 0\n", 0.5, false},
	} {
		ws := t.TempDir()
		os.WriteFile(filepath.Join(ws, "stats.py"), []byte(tc.stats), 0o644)
		r := ceval(t, "grade", "--json", "--containerd-address", "/nonexistent/containerd.sock", taskFile, "--workspace", ws)
		var res struct {
			Criteria []struct {
				Status string  `json:"status"`
				Score  float64 `json:"score"`
				Passed bool    `json:"passed"`
			} `json:"criteria"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Criteria) != 3 {
			t.Fatalf("%s: exit %d %v\n%s\n%s", tc.name, r.code, err, r.stdout, r.stderr)
		}
		py, imp, chk := res.Criteria[0], res.Criteria[1], res.Criteria[2]
		if py.Status != "NOT_GRADED" || imp.Score != tc.importScore || chk.Passed != tc.checkPassed {
			t.Errorf("%s: pytest %+v, import_check %+v, check %+v\n%s", tc.name, py, imp, chk, r.stdout)
		}
	}
}

// buildDefaultWithBash builds ceval's default image with Debian's bash-static as /bin/bash
// under name: harbor_reward runs test.sh with bash, as Harbor does.
func buildDefaultWithBash(t *testing.T, ctx context.Context, c *client.Client, name string) {
	t.Helper()
	bash, err := os.ReadFile(images.BashStatic)
	if err != nil {
		t.Fatalf("bash for the image (apt-get install bash-static): %v", err)
	}
	if _, err := images.BuildDefault(ctx, c, images.DefaultOptions{Name: name, Extra: []images.File{{Path: "bin/bash", Mode: 0o755, Data: bash}}}); err != nil {
		t.Fatal(err)
	}
}
