package importer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/task"
)

// TestImportCoderEvalFullFixtureMapsEveryFieldAndLoads imports the fixture that uses every
// field the importer maps: nothing is reported unmapped, the output loads, and it means
// what the input meant.
func TestImportCoderEvalFullFixtureMapsEveryFieldAndLoads(t *testing.T) {
	out := t.TempDir()
	rs, err := ImportCoderEval([]string{"testdata/coder-eval/full"}, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 {
		t.Fatalf("got %d results, want 1: %+v", len(rs), rs)
	}
	r := rs[0]
	for _, p := range r.Problems {
		if p.Unmapped {
			t.Errorf("unexpected: %s", p)
		}
	}
	if !r.OK() {
		t.Fatalf("not ok: invalid=%v", r.Invalid)
	}
	tk, err := task.Load(r.Output)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--permission-mode", "acceptEdits", "--allowedTools", "Read,Write,Bash", "--disallowedTools", "TodoWrite",
		"--max-turns", "12", "--setting-sources", "project", "--append-system-prompt", "Be brief.",
		"--settings", `{"permissions":{"deny":["Read(/etc/**)"]}}`}
	if !slices.Equal(tk.Agent.Args, want) {
		t.Errorf("agent args = %q, want %q", tk.Agent.Args, want)
	}
	if tk.Sandbox.Limits.Timeout != 900*time.Second {
		t.Errorf("timeout = %v, want run_limits.task_timeout's 900s", tk.Sandbox.Limits.Timeout)
	}
	if tk.Sandbox.Limits.MemoryMB != 2048 || tk.Sandbox.Limits.Pids != 256 {
		t.Errorf("limits = %+v", tk.Sandbox.Limits)
	}
	if !slices.Equal(tk.Sandbox.Pip, []string{"requests==2.32.3"}) || tk.Sandbox.Image != "ceval/default:latest" {
		t.Errorf("sandbox = %+v", tk.Sandbox)
	}
	if tk.Sandbox.Workspace.TemplateDir == nil || len(tk.Sandbox.Workspace.StarterFiles) != 1 {
		t.Errorf("workspace = %+v", tk.Sandbox.Workspace)
	}
	if tk.RunLimits == nil || tk.RunLimits.MaxTurns != 40 || !slices.Equal(tk.Agent.EnvPassthrough, []string{"MY_TOKEN"}) || len(tk.Plugins) != 1 {
		t.Errorf("run_limits %+v, env %q, plugins %d", tk.RunLimits, tk.Agent.EnvPassthrough, len(tk.Plugins))
	}
	if len(tk.Criteria) != 13 {
		t.Fatalf("%d criteria, want all 13", len(tk.Criteria))
	}
	if c, ok := tk.Criteria[7].Spec.(*task.ToolCalledSpec); !ok || c.Tool != "Bash" || c.Outcome != "ok" {
		t.Errorf("command_executed became %+v", tk.Criteria[7])
	}
	if c, ok := tk.Criteria[8].Spec.(*task.ToolCalledSpec); !ok || c.MaxCount != 0 || c.MinCount != 0 {
		t.Errorf("command_not_executed became %+v", tk.Criteria[8])
	}
	if c := tk.Criteria[6]; c.Execution().Timeout != 30*time.Second {
		t.Errorf("run_command timeout %v, want 30s", c.Execution().Timeout)
	}
	data, _ := os.ReadFile(r.Output)
	for _, comment := range []string{"# A coder_eval task using every field", "# the file must exist"} {
		if !strings.Contains(string(data), comment) {
			t.Errorf("comment %q was lost:\n%s", comment, data)
		}
	}
}

// unmappedCases are coder_eval inputs ceval cannot carry over: each must be reported at its
// line, never dropped silently.
var unmappedCases = []struct {
	name, yaml, field, reason string
	line                      int
	criterion                 bool // an unmappable criterion (kept as a placeholder with KeepUnmapped)
}{
	{"proprietary evaluator", crit("  - type: uipath_eval\n    evaluator: x\n"), "success_criteria[1] (uipath_eval)", "proprietary", 9, true},
	{"pytest field of another harness", crit("  - type: pytest\n    test_file: tests/test_x.py\n"), "success_criteria[1].test_file", "not a field", 10, false},
	{"import check without a path", crit("  - type: import_check\n    module: foo\n"), "success_criteria[1] (import_check)", "needs path", 9, true},
	{"the task dir itself in a command", crit("  - type: run_command\n    command: cd $TASK_DIR && python check.py\n"), "success_criteria[1] (run_command)", "grader_files", 9, true},
	{"unknown criterion field", crit("  - type: file_exists\n    path: a\n    glob: true\n"), "success_criteria[1].glob", "not a field", 11, false},
	{"unknown agent", strings.Replace(base, "type: claude-code", "type: antigravity", 1), "agent.type", "no ceval agent type", 5, false},
	{"plugin through an environment variable", strings.Replace(base, "agent:\n", "agent:\n  plugins:\n    - type: local\n      path: $PLUGIN_PATH/x\n", 1), "agent.plugins[0]", "environment variable", 7, false},
	{"npm packages", base + "sandbox:\n  node:\n    env_packages: [\"@uipath/cli@0.1.5\"]\n", "sandbox.node.env_packages", "npm", 11, false},
	{"unpinned python package", base + "sandbox:\n  python:\n    env_packages: [requests]\n", "sandbox.python.env_packages", "not pinned", 11, false},
	{"repository template", base + "sandbox:\n  template_sources:\n    - type: repo\n      url: https://example.com/r.git\n", "sandbox.template_sources[0]", "clones", 11, false},
	{"dockerfile", base + "sandbox:\n  docker:\n    dockerfile_path: ./environment/Dockerfile\n", "sandbox.docker.dockerfile_path", "Dockerfile builder", 11, false},
	{"dataset sampling", base + "dataset:\n  paths: [a.jsonl]\n  sample_per_stratum: 2\n", "dataset.sample_per_stratum", "every row", 11, false},
	{"dataset of many files", base + "dataset:\n  paths: [a.jsonl, b.jsonl]\n", "dataset.paths", "one rows file", 10, false},
	{"codex permission mode", strings.Replace(base, "type: claude-code", "type: codex\n  permission_mode: plan", 1), "agent.permission_mode", "claude-code", 6, false},
	{"system prompt file", strings.Replace(base, "agent:\n", "agent:\n  system_prompt_file: sp.md\n", 1), "agent.system_prompt_file", "inline", 5, false},
}

const base = `task_id: t1
description: d
initial_prompt: p
agent:
  type: claude-code
success_criteria:
  - type: file_exists
    path: hello.txt
`

func crit(c string) string { return base + c }

func TestImportCoderEvalReportsEachUnmappedFieldAtItsLine(t *testing.T) {
	for _, tc := range unmappedCases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := CoderEval("in.yaml", []byte(tc.yaml), Options{})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range r.Problems {
				if p.Unmapped && p.Field == tc.field {
					found = true
					if p.Line != tc.line || p.File != "in.yaml" || !strings.Contains(p.Reason, tc.reason) {
						t.Errorf("got %s, want line %d and a reason mentioning %q", p, tc.line, tc.reason)
					}
					if !strings.HasPrefix(p.String(), "in.yaml:") {
						t.Errorf("%q does not start with FILE:LINE", p)
					}
				}
			}
			if !found {
				t.Fatalf("%s not reported; problems: %v", tc.field, r.Problems)
			}
			if r.Unmapped() == 0 {
				t.Fatal("counted as fully mapped")
			}
			if tc.criterion {
				if strings.Contains(string(r.Output), "success_criteria[1]") || strings.Count(string(r.Output), "- type:") != 1 {
					t.Errorf("the unmapped criterion is still in the output without --keep-unmapped:\n%s", r.Output)
				}
				checkPlaceholder(t, tc.yaml)
			}
		})
	}
}

// checkPlaceholder: with KeepUnmapped the criterion stays as a run_command that always
// fails and names what it stands for; the output loads.
func checkPlaceholder(t *testing.T, in string) {
	t.Helper()
	r, err := CoderEval("in.yaml", []byte(in), Options{KeepUnmapped: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, r.Output, 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatalf("placeholder output does not load: %v\n%s", err, r.Output)
	}
	if len(tk.Criteria) != 2 {
		t.Fatalf("%d criteria, want the kept one and the placeholder", len(tk.Criteria))
	}
	c := tk.Criteria[1]
	if c.Type != task.RunCommand || !strings.HasSuffix(c.Spec.(*task.RunCommandSpec).Command, "; exit 1") || !strings.Contains(c.Description, "unmapped criterion") || !strings.Contains(c.Description, "in.yaml:9") {
		t.Errorf("placeholder = %+v", c)
	}
}

// TestImportCoderEvalExperimentConvertsDefaultsAndVariants: defaults and variants are
// converted like tasks (agent flags, timeouts), repeats moves up, what ceval lacks is
// reported at its line, and the output plus a tasks list loads as a ceval experiment.
func TestImportCoderEvalExperimentConvertsDefaultsAndVariants(t *testing.T) {
	in := `experiment_id: model-comparison
description: two models
defaults:
  repeats: 3
  driver: docker
  agent:
    type: claude-code
    permission_mode: bypassPermissions
  run_limits:
    task_timeout: 120
variants:
  - variant_id: sonnet # the default model
    description: Sonnet
    agent:
      model: claude-sonnet-4-5
  - variant_id: opus
    repeats: 5
    prompt_mutations:
      - type: append
        text: Be careful.
    agent:
      model: claude-opus-4-1
`
	r, err := CoderEval("exp.yaml", []byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"variants[1].repeats": 17, "variants[1].prompt_mutations[0]": 19}
	for _, p := range r.Problems {
		if line, ok := want[p.Field]; ok && p.Unmapped && p.Line == line {
			delete(want, p.Field)
		}
	}
	if len(want) > 0 || !r.Experiment {
		t.Fatalf("not reported: %v; problems %v", want, r.Problems)
	}
	dir := t.TempDir()
	task1 := "task_id: t1\ninitial_prompt: p\nsuccess_criteria:\n  - type: file_exists\n    path: a\n"
	if err := os.WriteFile(filepath.Join(dir, "t1.yaml"), []byte(task1), 0o644); err != nil {
		t.Fatal(err)
	}
	out := string(r.Output)
	for _, s := range []string{"# the default model", "Sonnet", "repeats: 3", "--permission-mode"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	p := filepath.Join(dir, "exp.yaml")
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := task.LoadExperiment(p, task.ExperimentOptions{Tasks: []string{filepath.Join(dir, "t1.yaml")}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if e.Repeats != 3 || len(e.Entries) != 2 || e.Entries[1].Task.Agent.Model != "claude-opus-4-1" || e.Entries[0].Task.Sandbox.Limits.Timeout != 120*time.Second {
		t.Fatalf("experiment %+v", e)
	}
	if !slices.Contains(e.Entries[0].Task.Agent.Args, "bypassPermissions") {
		t.Fatalf("args %q", e.Entries[0].Task.Agent.Args)
	}
}

// TestImportCoderEvalValidatesAnExperimentWithItsTasks: an experiment imported with tasks is
// loaded with them, so a variant the tasks cannot take makes it invalid.
func TestImportCoderEvalValidatesAnExperimentWithItsTasks(t *testing.T) {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "tasks/t1.yaml"), base)
	writeFile(t, filepath.Join(src, "experiments/e.yaml"), "experiment_id: e\nvariants:\n  - variant_id: a\n    agent:\n      model: m\n    sandbox:\n      limits:\n        max_memory_mb: 1\n")
	rs, err := ImportCoderEval([]string{src}, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Experiment && (r.Invalid == nil || !strings.Contains(r.Invalid.Error(), "memory_mb")) {
			t.Fatalf("a variant with memory_mb 1 validated: %v", r.Invalid)
		}
	}
}

func writeFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImportCoderEvalRunCommandReadingTheReferenceUsesIt: $REFERENCE_DIR in a run_command
// becomes uses_reference, so ceval mounts the reference (read-only) for that criterion only.
func TestImportCoderEvalRunCommandReadingTheReferenceUsesIt(t *testing.T) {
	in := base + "  - type: run_command\n    command: diff $REFERENCE_DIR/out.txt out.txt\nreference:\n  directory: ref\n"
	r, err := CoderEval("in.yaml", []byte(in), Options{})
	if err != nil || r.Unmapped() != 0 {
		t.Fatalf("%v %v", err, r.Problems)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ref/out.txt"), "x")
	writeFile(t, filepath.Join(dir, "task.yaml"), string(r.Output))
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		t.Fatalf("%v\n%s", err, r.Output)
	}
	defer tk.Close()
	if c := tk.Criteria[1]; c.Type != task.RunCommand || !c.Spec.(*task.RunCommandSpec).UsesReference {
		t.Fatalf("criterion %+v", c)
	}
}

// TestImportCoderEvalDatasetBecomesCevalsDataset: one JSONL file keyed by id maps, and the
// output expands per row.
func TestImportCoderEvalDatasetBecomesCevalsDataset(t *testing.T) {
	src := t.TempDir()
	in := "task_id: cls\ndescription: d\ninitial_prompt: \"Classify ${row.text}\"\nagent:\n  type: claude-code\ndataset:\n  paths: [rows.jsonl]\n  id_field: id\n" +
		"success_criteria:\n  - type: classification_match\n    path: label.txt\n    expected_label: \"${row.label}\"\n"
	writeFile(t, filepath.Join(src, "task.yaml"), in)
	writeFile(t, filepath.Join(src, "rows.jsonl"), "{\"id\": \"a\", \"text\": \"x\", \"label\": \"p\"}\n{\"id\": \"b\", \"text\": \"y\", \"label\": \"n\"}\n")
	out := t.TempDir()
	rs, err := ImportCoderEval([]string{src}, out, Options{})
	if err != nil || len(rs) != 1 || !rs[0].OK() {
		t.Fatalf("%v %+v", err, rs)
	}
	ts, err := task.LoadAll(rs[0].Output, task.LoadOptions{})
	if err != nil || len(ts) != 2 || ts[1].ID != "cls.b" || ts[1].Criteria[0].Spec.(*task.ClassificationMatchSpec).ExpectedLabel != "n" {
		t.Fatalf("%v %v", err, ts)
	}
	for _, tk := range ts {
		tk.Close()
	}
}

func TestImportCoderEvalReportsExperimentFilesAndLinks(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "exp.yaml"), []byte("experiment_id: e\nvariants:\n  - variant_id: a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "task.yaml"), []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "secret.txt")); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	rs, err := ImportCoderEval([]string{src}, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var exp, link, ok bool
	for _, r := range rs {
		switch filepath.Base(r.Input) {
		case "exp.yaml":
			exp = r.Experiment && r.Unmapped() == 0 && r.Problems[0].Field == "tasks" && r.OK()
		case "secret.txt":
			link = r.Unmapped() == 1 && strings.Contains(r.Problems[0].Reason, "symbolic link")
		case "task.yaml":
			ok = r.OK()
		}
	}
	if !exp || !link || !ok {
		t.Fatalf("experiment reported %v, link reported %v, task ok %v: %+v", exp, link, ok, rs)
	}
	if _, err := os.Lstat(filepath.Join(out, filepath.Base(src), "secret.txt")); !os.IsNotExist(err) {
		t.Fatalf("the link was copied or followed: %v", err)
	}
}

// TestImportCoderEvalWithRootCarriesMaterialAboveTheTask: a template two levels above the
// task (coder_eval's ../../skills/... layout) comes along and validates under --root; without
// a root the output is reported invalid, not silently broken.
func TestImportCoderEvalWithRootCarriesMaterialAboveTheTask(t *testing.T) {
	repo := t.TempDir()
	for _, d := range []string{"tasks/t", "skills/tm"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "skills/tm/a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	body := base + "sandbox:\n  template_sources:\n    - type: template_dir\n      path: ../../skills/tm\n"
	if err := os.WriteFile(filepath.Join(repo, "tasks/t/task.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	rs, err := ImportCoderEval([]string{filepath.Join(repo, "tasks")}, out, Options{Root: repo})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || !rs[0].OK() || rs[0].Output != filepath.Join(out, "tasks/t/task.yaml") {
		t.Fatalf("with a root: %+v", rs)
	}
	tk, err := task.LoadWith(rs[0].Output, task.LoadOptions{Root: out})
	if err != nil {
		t.Fatal(err)
	}
	tk.Close()
	if _, err := os.Stat(filepath.Join(out, "skills/tm/a.txt")); err != nil {
		t.Fatalf("the template was not carried along: %v", err)
	}
	rs, err = ImportCoderEval([]string{filepath.Join(repo, "tasks")}, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Invalid == nil || rs[0].OK() || !strings.Contains(rs[0].Invalid.Error(), "--root") {
		t.Fatalf("without a root: %+v", rs)
	}
	if _, err := ImportCoderEval([]string{repo}, t.TempDir(), Options{Root: filepath.Join(repo, "tasks")}); err == nil {
		t.Fatal("a SRC outside the root was accepted")
	}
}

// TestImportCoderEvalMapsPythonCriteria: coder_eval's pytest (tests in the workspace) becomes
// a run_command in a verifier container, import_check a Python check scored from stdout in
// WASM (the task installs no packages), and a run_command reading $TASK_DIR/checks/... gets
// checks as grader files; each mapping is a note at its line, nothing is unmapped.
func TestImportCoderEvalMapsPythonCriteria(t *testing.T) {
	out := t.TempDir()
	rs, err := ImportCoderEval([]string{"testdata/coder-eval/python"}, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var r FileResult
	for _, x := range rs {
		if strings.HasSuffix(x.Input, "task.yaml") {
			r = x
		}
	}
	if !r.OK() {
		t.Fatalf("not OK: %v %v", r.Invalid, r.Problems)
	}
	notes := map[int]bool{}
	for _, p := range r.Problems {
		notes[p.Line] = true
	}
	for _, line := range []int{17, 22, 27} {
		if !notes[line] {
			t.Errorf("no note at line %d: %v", line, r.Problems)
		}
	}
	tk, err := task.Load(r.Output)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if len(tk.Criteria) != 3 || len(tk.GraderFiles) != 1 || tk.GraderFiles[0].Rel != "checks" {
		t.Fatalf("criteria %d, grader files %+v", len(tk.Criteria), tk.GraderFiles)
	}
	py, imp, chk := tk.Criteria[0], tk.Criteria[1], tk.Criteria[2]
	if py.Type != task.RunCommand || py.Tier() != task.TierContainer || py.Spec.(*task.RunCommandSpec).Command != "python3 -m pytest -q -p no:cacheprovider 'tests' '-x'" || py.Execution().Timeout != 120*time.Second {
		t.Errorf("pytest became %+v", py)
	}
	if imp.Type != task.RunCommand || imp.Tier() != task.TierWASM || !imp.StdoutScoring().ScoreFromStdout || !strings.HasSuffix(imp.Spec.(*task.RunCommandSpec).Command, " 'stats.py'") {
		t.Errorf("import_check became %+v", imp)
	}
	if chk.Tier() != task.TierWASM || len(chk.Execution().GraderFiles) != 1 || chk.Execution().GraderFiles[0].Rel != "checks" {
		t.Errorf("the $TASK_DIR run_command became %+v", chk)
	}
}

// TestImportCheckGoesToTheImageWhenTheTaskInstallsPackages: the imports of a task that
// installs packages resolve in its image, not in WASM, where they are missing.
func TestImportCheckGoesToTheImageWhenTheTaskInstallsPackages(t *testing.T) {
	doc := base + "sandbox:\n  python:\n    env_packages: [\"requests==2.32.3\"]\n" + "success_criteria:\n  - type: import_check\n    description: imports\n    path: main.py\n"
	r, err := CoderEval("in.yaml", []byte(strings.Replace(doc, "success_criteria:\n  - type: file_exists\n    path: a\n", "", 1)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.Output), "sandbox: container") || !strings.Contains(string(r.Output), "score_from_stdout: true") {
		t.Fatalf("output:\n%s\n%v", r.Output, r.Problems)
	}
}

func TestTaskDirFilesTakesTheFirstComponentOfEachPath(t *testing.T) {
	for cmd, want := range map[string]string{
		"python3 $TASK_DIR/checks/a.py && diff out.txt ${TASK_DIR}/expected.txt": "checks,expected.txt",
		"sh \"$TASK_DIR/run.sh\"; cat $TASK_DIR/checks/x":                        "run.sh,checks",
		"echo $TASK_DIRX": "",
	} {
		files, whole := taskDirFiles(cmd)
		if strings.Join(files, ",") != want || whole {
			t.Errorf("%q: %v %v, want %s", cmd, files, whole, want)
		}
	}
	if _, whole := taskDirFiles("cd $TASK_DIR && ls"); !whole {
		t.Error("cd $TASK_DIR: the whole directory not noticed")
	}
}

// TestImportCoderEvalReadsNamedFilesInsideTheTreeOnly: a system_prompt_file beside the task
// is read into the claude CLI's flag; one outside the imported tree, or a symbolic link (even
// to a file inside it, as the import never follows links), is never read: it is reported.
func TestImportCoderEvalReadsNamedFilesInsideTheTreeOnly(t *testing.T) {
	top := t.TempDir()
	dir := filepath.Join(top, "suite")
	writeFile(t, filepath.Join(top, "secret.md"), "outside the tree")
	writeFile(t, filepath.Join(dir, "prompts", "sys.md"), "Be careful.")
	writeFile(t, filepath.Join(dir, "notes", "inner.md"), "reached through a link")
	if err := os.Symlink(filepath.Join("..", "notes", "inner.md"), filepath.Join(dir, "prompts", "link.md")); err != nil {
		t.Fatal(err)
	}
	task := func(prompt string) string {
		return "task_id: t\ndescription: d\ninitial_prompt: p\nagent:\n  type: claude-code\n  system_prompt_file: " + prompt + "\nsuccess_criteria:\n  - {type: file_exists, path: a}\n"
	}
	writeFile(t, filepath.Join(dir, "inside.yaml"), task("prompts/sys.md"))
	writeFile(t, filepath.Join(dir, "outside.yaml"), task("../secret.md"))
	writeFile(t, filepath.Join(dir, "link.yaml"), task("prompts/link.md"))
	rs, err := ImportCoderEval([]string{dir}, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]FileResult{}
	for _, r := range rs {
		got[filepath.Base(r.Input)] = r
	}
	if r := got["inside.yaml"]; r.Unmapped() != 0 || !strings.Contains(string(r.Result.Output), "Be careful.") {
		t.Errorf("inside: %v\n%s", r.Problems, r.Output)
	}
	for _, name := range []string{"outside.yaml", "link.yaml"} {
		r := got[name]
		if strings.Contains(string(r.Result.Output), "outside the tree") || strings.Contains(string(r.Result.Output), "reached through a link") || findProblem(r.Result, "agent.system_prompt_file") == nil || !findProblem(r.Result, "agent.system_prompt_file").Unmapped {
			t.Errorf("%s: read or not reported: %v\n%s", name, r.Problems, r.Output)
		}
	}
}
