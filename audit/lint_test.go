package audit

import (
	"strings"
	"testing"
)

func TestLintNamesEachWeakPatternAtItsLine(t *testing.T) {
	const head = "task_id: t\ninitial_prompt: Write hello.txt saying Hello, ceval! and report.json.\nsolution: {files: sol}\nsuccess_criteria:\n"
	for _, tc := range []struct {
		name, criteria string
		want           string // "" : no warning
	}{
		{"no gating criterion", "  - {type: file_exists, path: a, weight: 0}\n", "t.yaml:1:1: warning: no gating criterion"},
		{"only existence checks", "  - {type: file_exists, path: a}\n  - {type: file_exists, path: b}\n", "t.yaml:5:5: warning: only existence checks"},
		{"includes without excludes", "  - {type: file_contains, path: a, includes: [zebra]}\n", "t.yaml:5:5: warning: success_criteria[0] (file_contains): includes without excludes"},
		{"includes the prompt holds", "  - {type: file_contains, path: hello.txt, includes: ['Hello, ceval!']}\n", "every one of them is in the prompt"},
		{"includes with excludes", "  - {type: file_contains, path: a, includes: [zebra], excludes: [TODO]}\n", ""},
		{"pattern matching empty", "  - {type: file_matches_regex, path: a, pattern: 'x*'}\n", "t.yaml:5:5: warning: success_criteria[0] (file_matches_regex): pattern \"x*\" matches an empty file"},
		{"pattern needing content", "  - {type: file_matches_regex, path: a, pattern: '^x+$'}\n", ""},
		{"json fields only", "  - {type: json_check, path: r.json, assertions: [{expression: a, operator: exists}]}\n", "only exists/type assertions"},
		{"json values", "  - {type: json_check, path: r.json, assertions: [{expression: a, operator: equals, expected: 1}]}\n", ""},
		{"exit code of the agent's script", "  - {type: run_command, command: sh tests/run.sh}\n", "t.yaml:5:5: warning: success_criteria[0] (run_command): only the exit code of \"sh tests/run.sh\""},
		{"exit code of pytest", "  - {type: run_command, command: pytest -q}\n", "only the exit code"},
		{"pytest over the agent's code", "  - {type: pytest, tests: sol/}\n", "t.yaml:5:5: warning: success_criteria[0] (pytest): the tests import the agent's code into pytest's own process"},
		{"harbor_reward runs the agent's code but is scored by its reward", "  - {type: run_command, command: 'sh tests/test.sh', sandbox: container, harbor_reward: true}\n", ""},
		{"pytest isolated from the agent's code", "  - {type: pytest, tests: sol/, sandbox: container, isolation: process}\n", ""},
		{"pytest isolation none", "  - {type: pytest, tests: sol/, sandbox: container, isolation: none}\n", "give it sandbox: container and isolation: process"},
		{"harbor test.sh running pytest", "grader_files: [tests]\n" + "  - {type: run_command, sandbox: container, harbor_reward: true, command: '. /task/tests/test.sh'}\n", "tests/test.sh:3 runs pytest, and test.sh writes the reward from it"},
		{"harbor test.sh without pytest", "grader_files: [sol]\n" + "  - {type: run_command, sandbox: container, harbor_reward: true, command: '. /task/tests/test.sh'}\n", ""},
		{"pytest in WASM", "  - {type: pytest, tests: sol/}\n", "the WASM sandbox has no hardened mode"},
		{"stdout of the agent's script", "  - {type: run_command, command: sh greet.sh Ada, expected_stdout: 'Hello, Ada!'}\n", ""},
		{"an expected value in a description shown as feedback", "  - {type: json_check, path: r.json, description: the answer is 4471, assertions: [{expression: a, operator: equals, expected: 4471}]}\n" + iterate("descriptions"),
			"t.yaml:5:5: warning: success_criteria[0] (json_check): its description holds its expected value \"4471\", and iterations.feedback: descriptions shows"},
		{"expected stdout in a description shown with details", "  - {type: run_command, command: sh greet.sh Ada, expected_stdout: 'Hello, Ada!', description: 'greet.sh prints Hello, Ada!'}\n" + iterate("details"), "holds its expected value \"Hello, Ada!\""},
		{"an expected value in a description never shown", "  - {type: json_check, path: r.json, description: the answer is 4471, assertions: [{expression: a, operator: equals, expected: 4471}]}\n", ""},
		{"an expected value in a description with feedback none", "  - {type: json_check, path: r.json, description: the answer is 4471, assertions: [{expression: a, operator: equals, expected: 4471}]}\n" + iterate("none"), ""},
		{"an expected value the prompt gives", "  - {type: json_check, path: r.json, description: file names hello.txt, assertions: [{expression: file, operator: equals, expected: hello.txt}]}\n" + iterate("details"), ""},
		{"an expected value inside a longer word", "  - {type: json_check, path: r.json, description: n is not 421, assertions: [{expression: n, operator: equals, expected: 42}]}\n" + iterate("details"), ""},
		{"exit code of a grep", "  - {type: run_command, command: \"grep -q '^Hello, ceval!$' hello.txt\"}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crit := tc.criteria
			pre := ""
			if strings.HasPrefix(crit, "grader_files:") { // a task-level key, before success_criteria
				pre, crit, _ = strings.Cut(crit, "\n")
				pre += "\n"
			}
			p := writeTask(t, strings.Replace(head, "success_criteria:\n", pre+"success_criteria:\n", 1)+crit, map[string]string{"sol/a": "x",
				"tests/test.sh": "# Harbor's tests\ncd /app\npython3 -m pytest /tests/test_outputs.py -rA\nif [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"})
			tk := load(t, p)
			tk.Path = "t.yaml"
			var got []string
			for _, w := range Lint(tk) {
				got = append(got, w.String())
			}
			all := strings.Join(got, "\n")
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("warnings %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(all, tc.want)):
				t.Errorf("warnings %q, want one with %q", got, tc.want)
			}
		})
	}
}

// iterate is a task's iterations section at a feedback level.
func iterate(feedback string) string { return "iterations: {max: 2, feedback: " + feedback + "}\n" }

func TestLintOfTheExamples(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"../examples/audit/sound/task.yaml", ""},
		{"../examples/audit/hackable/task.yaml", "task.yaml:18:5: warning: success_criteria[0] (run_command): only the exit code of \"sh tests/test_calc.sh\""},
		{"../examples/hello/task.yaml", "task.yaml:1:1: warning: no solution"},
	} {
		var got []string
		for _, w := range Lint(load(t, tc.path)) {
			got = append(got, w.String())
		}
		if all := strings.Join(got, "\n"); (tc.want == "") != (all == "") || !strings.Contains(all, tc.want) {
			t.Errorf("%s: warnings %q, want %q", tc.path, got, tc.want)
		}
	}
}

// A patch-test-runner SUCCESS names the way out by what it fooled: a pytest criterion's
// hardened mode, or, for a command whose pytest it rewrote (a Harbor test.sh's reward), a
// pytest criterion in that mode.
func TestPatchTestRunnerFixNamesTheWayOutByWhatItFooled(t *testing.T) {
	for _, tc := range []struct {
		fooled      []string
		want, never string
	}{
		{[]string{"pytest"}, "give each pytest criterion sandbox: container and isolation: process", "Harbor"},
		{[]string{"run_command"}, "a Harbor tests/test.sh's, whose reward follows it", "give each pytest criterion"},
		{[]string{"pytest", "run_command"}, "all_or_nothing: true", ""},
	} {
		var cs []Criterion
		for _, ty := range tc.fooled {
			cs = append(cs, Criterion{Type: ty})
		}
		got := patchTestRunnerFix(cs)
		if !strings.Contains(got, tc.want) || tc.never != "" && strings.Contains(got, tc.never) {
			t.Errorf("fooled %v: %q, want %q and not %q", tc.fooled, got, tc.want, tc.never)
		}
	}
}
