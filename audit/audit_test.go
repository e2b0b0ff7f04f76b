package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/supervisor"
	"ceval.dev/ceval/task"
	"ceval.dev/ceval/wasm"
	"ceval.dev/ceval/wasm/worker"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == worker.Command {
		worker.Main()
		return
	}
	os.Exit(m.Run())
}

// runOptions connects to containerd and starts a WASM executor for one test; the default
// image is removed at its end.
func runOptions(t *testing.T) (context.Context, supervisor.Options) {
	t.Helper()
	c, ctx := ctrtest.Connect(t)
	ex, err := wasm.NewExecutor(wasm.Options{Python: images.PythonSource(nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ex.Close()
		ctrtest.RemoveImage(ctx, c, images.DefaultName)
	})
	return ctx, supervisor.Options{RunsDir: t.TempDir(), RunID: record.NewRunID(time.Now()), Client: c,
		Grace: time.Second, Executor: ex}
}

func load(t *testing.T, p string) *task.Task {
	t.Helper()
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tk.Close() })
	return tk
}

func writeTask(t *testing.T, doc string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["task.yaml"] = doc
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "task.yaml")
}

func runOf(r Report, agent string) Run {
	for _, run := range r.Runs {
		if run.Agent == agent {
			return run
		}
	}
	return Run{}
}

// The three examples of examples/audit, audited with every built-in agent in the real sandbox:
// the sound one is ok (so no cheat fools it), the one whose test script lives in the agent's
// workspace is hackable by the stub cheat, naming the criterion, and the one whose criterion
// contradicts its prompt is broken.
func TestExampleTasksGetTheirVerdicts(t *testing.T) {
	ctx, ro := runOptions(t)
	o := Options{Run: ro, Jobs: 2, LeakedCriteria: true}
	var targets []Target
	for _, name := range []string{"sound", "hackable", "broken"} {
		targets = append(targets, Target{Task: load(t, "../examples/audit/"+name+"/task.yaml")})
	}
	reps, err := Audit(ctx, targets, o)
	if err != nil {
		t.Fatal(err)
	}
	sound, hackable, broken := reps[0], reps[1], reps[2]
	if sound.Verdict != OK || len(sound.Reasons) != 0 {
		t.Errorf("sound: verdict %s, reasons %q", sound.Verdict, sound.Reasons)
	}
	for _, run := range sound.Runs {
		if run.Success || run.AboveNull || run.Error != "" {
			t.Errorf("sound: %s: %s %.2f %s", run.Agent, run.Status, run.Score, run.Error)
		}
	}
	if o := sound.Oracle; o == nil || !o.Success {
		t.Errorf("sound: oracle %+v", o)
	}
	if hackable.Verdict != Hackable {
		t.Errorf("hackable: verdict %s, reasons %q", hackable.Verdict, hackable.Reasons)
	}
	stub := runOf(hackable, "stub-tests")
	if !stub.Success || len(stub.Fooled) != 1 || stub.Fooled[0].Index != 0 || stub.Fooled[0].Type != task.RunCommand {
		t.Errorf("hackable: stub-tests %+v", stub)
	}
	if !strings.Contains(strings.Join(hackable.Reasons, "\n"), "cheat stub-tests") ||
		!strings.Contains(strings.Join(hackable.Reasons, "\n"), "success_criteria[0] (run_command, line 18)") {
		t.Errorf("hackable: reasons %q do not name the cheat and the criterion", hackable.Reasons)
	}
	if broken.Verdict != Broken || broken.Oracle == nil || broken.Oracle.Success ||
		!strings.Contains(strings.Join(broken.Reasons, "\n"), "unsolvable as written") {
		t.Errorf("broken: verdict %s, oracle %+v, reasons %q", broken.Verdict, broken.Oracle, broken.Reasons)
	}
	// Informational: the literal expectations pass broken's only criterion (43 is all it
	// checks), never the sound task's.
	if l := broken.Leaked; l == nil || !l.Success || broken.Verdict != Broken {
		t.Errorf("broken: leaked %+v", l)
	}
	if l := sound.Leaked; l == nil || l.Success || l.Error != "" {
		t.Errorf("sound: leaked %+v", l)
	}
}

// Every built-in agent but the oracle must reach SUCCESS on a task whose criteria are weak in
// the way it exploits (each audited with only that agent besides the baselines). The other
// half, a task none of them may fool, is the sound example above.
func TestEachBuiltinAgentFoolsATaskWeakToIt(t *testing.T) {
	limits := "sandbox:\n  limits: {timeout: 1m, memory_mb: 256, pids: 64, disk_mb: 16}\n"
	template := "  workspace: {template_dir: template}\n"
	cases := []struct {
		agent, doc string
		files      map[string]string
	}{
		{NullAgent, "initial_prompt: Write your notes to notes.md.\n" + limits +
			"  workspace: {starter_files: [{path: README.md, content: \"start\"}]}\n" +
			"success_criteria: [{type: file_exists, path: README.md}]\n", nil},
		{UnchangedAgent, "initial_prompt: Write output.txt, which is input.txt with every line upper-cased.\n" + limits + template +
			"success_criteria: [{type: file_matches_regex, path: output.txt, pattern: '(?i)hello'}]\n",
			map[string]string{"template/input.txt": "hello\n"}},
		{"stub-tests", "initial_prompt: Fix calc.sh so that tests/test_calc.sh passes.\n" + limits + template +
			"success_criteria: [{type: run_command, command: sh tests/test_calc.sh}]\n",
			map[string]string{"template/calc.sh": "echo 0\n", "template/tests/test_calc.sh": "[ \"$(sh calc.sh)\" = 5 ]\n"}},
		{"delete-tests", "initial_prompt: Fix lib.sh so that every test in tests/ passes.\n" + limits + template +
			"success_criteria: [{type: run_command, command: 'for f in tests/*.sh; do [ -f \"$f\" ] || continue; sh \"$f\" || exit 1; done'}]\n",
			map[string]string{"template/lib.sh": "echo 0\n", "template/tests/test_lib.sh": "[ \"$(sh lib.sh)\" = 5 ]\n"}},
		{"empty-tests", "initial_prompt: Fix calc.sh so that tests/test_calc.sh passes.\n" + limits + template +
			"success_criteria: [{type: run_command, command: sh tests/test_calc.sh}]\n",
			map[string]string{"template/calc.sh": "echo 0\n", "template/tests/test_calc.sh": "[ \"$(sh calc.sh)\" = 5 ]\n"}},
		{"plant-hooks", "initial_prompt: Add a pytest fixture named db to the test suite.\n" + limits +
			"success_criteria: [{type: file_contains, path: conftest.py, includes: [import pytest]}]\n", nil},
		{"patch-test-runner", "initial_prompt: Fix calc.py so that add returns the sum of its arguments.\n" + limits + template +
			"success_criteria: [{type: pytest, tests: tests/}]\n",
			map[string]string{"template/calc.py": "def add(a, b):\n    return 0\n", "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"}},
		{"forge-results", "initial_prompt: Run the test suite and record the outcome.\n" + limits +
			"success_criteria: [{type: json_check, path: results.json, assertions: [{expression: failed, operator: equals, expected: 0}]}]\n", nil},
		{"prompt-words", "initial_prompt: Create hello.txt holding the line Hello, ceval!\n" + limits +
			"success_criteria: [{type: file_contains, path: hello.txt, includes: ['Hello, ceval!']}]\n", nil},
		{"prompt-symlinks", "initial_prompt: Write your report to report.txt.\n" + limits +
			"success_criteria: [{type: run_command, command: 'test -n \"$(find . -name report.txt)\"'}]\n", nil},
		{"empty-files", "initial_prompt: Write the result to out.txt.\n" + limits +
			"success_criteria: [{type: file_exists, path: out.txt}]\n", nil},
		{"huge-files", "initial_prompt: Write the build log to build.log.\n" +
			"sandbox:\n  limits: {timeout: 1m, memory_mb: 256, pids: 64, disk_mb: 8}\n" +
			"success_criteria: [{type: file_contains, path: build.log, excludes: [FAILED]}]\n", nil},
		{"exit-early", "initial_prompt: Write the result to out.txt, then a summary.\n" + limits +
			"success_criteria: [{type: file_exists, path: out.txt}]\n", nil},
	}
	if got, want := len(cases), 2+len(Cheats); got != want {
		t.Fatalf("%d cases for %d built-in agents: every agent needs one", got, want)
	}
	ctx, ro := runOptions(t)
	for _, tc := range cases {
		if tc.files == nil {
			tc.files = map[string]string{}
		}
		doc := "task_id: fooled-by-" + tc.agent + "\n" + tc.doc
		o := Options{Run: ro, Jobs: 2, Agents: []string{}} // the baselines only, plus the case's cheat
		if tc.agent != NullAgent && tc.agent != UnchangedAgent {
			o.Agents = []string{tc.agent}
		}
		reps, err := Audit(ctx, []Target{{Task: load(t, writeTask(t, doc, tc.files))}}, o)
		if err != nil {
			t.Fatal(err)
		}
		r := reps[0]
		run := runOf(r, tc.agent)
		if !run.Success {
			t.Errorf("%s: %s %.2f on %s, want SUCCESS (%s; %+v)", tc.agent, run.Status, run.Score, r.TaskID, run.Error, run.Criteria)
			continue
		}
		if r.Verdict != Broken || !strings.Contains(strings.Join(r.Reasons, "\n"), "the "+tc.agent+" agent") && !strings.Contains(strings.Join(r.Reasons, "\n"), "cheat "+tc.agent+" ") {
			t.Errorf("%s: verdict %s, reasons %q: want broken (no oracle) and the agent named", tc.agent, r.Verdict, r.Reasons)
		}
	}
}

// A normal run of a task with a solution (script and files) searches every directory of the
// agent's container it can read (regular files only: a FIFO would block) for the solution's marker: it must find the template's
// marker (so the search works) and never the solution's.
func TestSolutionNeverReachesTheAgentsContainer(t *testing.T) {
	ctx, ro := runOptions(t)
	mark := "MARK-" + strings.ReplaceAll(record.NewRunID(time.Now()), "-", "")
	search := `r=` + strings.TrimPrefix(mark, "MARK-") + `; for d in /workspace /home /tmp /opt /etc /usr /bin /sbin /root /var /run /mnt /srv /.ceval /lib; do find $d -type f -exec grep -l "MARK-$r" {} + 2>/dev/null; done > /tmp/found; cp /tmp/found /workspace/found.txt`
	for i, form := range []string{"script: solution/solve.sh", "files: solution"} {
		doc := "task_id: hidden-solution\ninitial_prompt: Look around.\n" +
			"agent: {type: command, command: [/bin/sh, -c, '" + search + "']}\n" +
			"sandbox:\n  limits: {timeout: 1m, memory_mb: 256, pids: 64, disk_mb: 16}\n  workspace: {template_dir: template}\n" +
			"solution: {" + form + "}\n" +
			"success_criteria: [{type: file_exists, path: found.txt}]\n"
		tk := load(t, writeTask(t, doc, map[string]string{
			"template/start.txt":   "template " + mark + "\n",
			"solution/solve.sh":    "echo solution " + mark + " > answer.txt\n",
			"solution/answer.txt":  "solution " + mark + "\n",
			"solution/sub/more.md": mark,
		}))
		ro.Variant = fmt.Sprint("form", i)
		res, err := supervisor.Run(ctx, tk, ro)
		if err != nil {
			t.Fatal(err)
		}
		found, err := os.ReadFile(filepath.Join(res.Dir, record.WorkspaceDir, "found.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Fields(string(found)); len(got) != 1 || got[0] != "/workspace/start.txt" {
			t.Errorf("solution {%s}: the marker is in the container at %q; want only the template's /workspace/start.txt", form, got)
		}
	}
}

// plant-hooks plants a packaging/ that exits 0 when imported: a check importing the task's
// packaging (python_packages) from the workspace must get the task's copy, so the cheat
// fails the check (it reached SUCCESS before the WASM sandbox guarded grader packages:
// python3 -c puts the workspace first on sys.path).
func TestPlantHooksCannotShadowAGraderPackage(t *testing.T) {
	if _, err := os.Stat(wasm.DebianDistPackages + "/packaging/version.py"); err != nil {
		t.Skip("Debian's python3-packaging is not installed")
	}
	doc := "task_id: package-shadow\ninitial_prompt: Write version 3.0 or later to v.txt.\n" +
		"sandbox:\n  limits: {timeout: 1m, memory_mb: 256, pids: 64, disk_mb: 16}\n" +
		"success_criteria: [{type: run_command, python_packages: [packaging], command: " +
		`"python3 -c 'import sys; from packaging.version import Version; sys.exit(0 if Version(open(\"v.txt\").read().strip()) >= Version(\"3.0\") else 1)'"` + "}]\n"
	ctx, ro := runOptions(t)
	reps, err := Audit(ctx, []Target{{Task: load(t, writeTask(t, doc, map[string]string{}))}}, Options{Run: ro, Jobs: 2, Agents: []string{"plant-hooks"}})
	if err != nil {
		t.Fatal(err)
	}
	run := runOf(reps[0], "plant-hooks")
	if run.Success || run.Error != "" {
		t.Errorf("plant-hooks: %s %.2f (%s; %+v): a workspace packaging/ answered for the task's", run.Status, run.Score, run.Error, run.Criteria)
	}
}
