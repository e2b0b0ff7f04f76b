package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// loadIterTask loads a task with a reference directory holding secret.txt, a grader file
// tests/test_hidden.py holding a hidden expected dict, and the given feedback and criteria.
func loadIterTask(t *testing.T, feedback, criteria string) *task.Task {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"ref/secret.txt":       "the reference answer is ORCA-PLUTO-8812\n",
		"tests/test_hidden.py": "import pytest\n\n@pytest.mark.parametrize(\"n\", [4471])\ndef test_answer(n):\n    assert solve(n) == dict(k=n, w=\"ZEBRA\")\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	doc := "task_id: t\ninitial_prompt: p\nagent: {type: command, command: [x]}\nreference: {directory: ref}\n" +
		"iterations: {max: 2, feedback: " + feedback + "}\nsuccess_criteria:\n" + criteria
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tk.Close() })
	return tk
}

// gradeFiles grades tk over a workspace holding files.
func gradeFiles(t *testing.T, tk *task.Task, files map[string]string) *grader.Result {
	t.Helper()
	ws := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := snapshot.Take(ws, filepath.Join(t.TempDir(), "snap"), snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return grader.Grade(context.Background(), tk, snap, grader.Options{})
}

// TestFollowUpPromptSaysPerLevelOnlyWhatCevalComposes grades an iteration whose failed
// criteria's details quote a reference file, a hidden expected output and the agent's own
// text, and checks the whole follow-up prompt at each feedback level: it is exactly what
// ceval composes from the task's words and the grade's numbers, so no detail gets in.
func TestFollowUpPromptSaysPerLevelOnlyWhatCevalComposes(t *testing.T) {
	criteria := "  - {type: file_contains, path: out.txt, includes: [\"MAGIC-TOKEN-93817\", \"hello\"], description: out.txt has the magic token}\n" +
		"  - {type: run_command, command: \"cat /reference/secret.txt; exit 1\", uses_reference: true, weight: 2}\n" +
		"  - {type: file_exists, path: done.txt, description: done.txt exists}\n"
	graded := func() *grader.Result {
		return &grader.Result{Status: grader.TaskFailure, Criteria: []grader.CriterionResult{
			{Type: "file_contains", Description: "out.txt has the magic token", Status: grader.Fail, Score: 0.5, Weight: 1, Gating: true,
				Details: "1/2 checks met: missing \"MAGIC-TOKEN-93817\"", Parts: &grader.Parts{Met: 1, Total: 2}},
			{Type: "run_command", Status: grader.Fail, Score: 0.123456789, Weight: 2, Gating: true,
				Details: "exit code 1, want 0; stdout \"the reference answer is ORCA-PLUTO-8812\\n\""},
			{Type: "file_exists", Description: "done.txt exists", Status: grader.Pass, Passed: true, Score: 1, Weight: 1, Gating: true,
				Details: "done.txt exists"},
		}}
	}
	intro := "Your work on this task was checked and it does not pass yet. Keep working in /workspace until it is done.\n"
	for _, c := range []struct{ level, want string }{
		{task.FeedbackNone, intro},
		{task.FeedbackDescriptions, intro + "\nThese checks failed:\n" +
			"- out.txt has the magic token\n" +
			"- (a check without a description)\n"},
		{task.FeedbackDetails, intro + "\n1 of 3 checks passed. These failed:\n" +
			"- check 1 (file_contains): out.txt has the magic token\n  FAIL, score 0.50, weight 1, 1 of 2 of its checks met\n" +
			"- check 2 (run_command): (a check without a description)\n  FAIL, score 0.12, weight 2\n"},
	} {
		tk := loadIterTask(t, c.level, criteria)
		if got := FeedbackPrompt(tk, graded()); got != c.want {
			t.Errorf("feedback %s: the follow-up prompt is\n%s\nwant\n%s", c.level, got, c.want)
		}
	}
}

// TestFollowUpPromptTakesNoTextFromTheGrade: a grade whose descriptions or types were
// rewritten (or whose criteria do not line up with the task's) cannot put text in the
// prompt: descriptions and types come from the task by position.
func TestFollowUpPromptTakesNoTextFromTheGrade(t *testing.T) {
	tk := loadIterTask(t, task.FeedbackDetails, "  - {type: file_exists, path: a.txt, description: a.txt exists}\n")
	forged := grader.CriterionResult{Type: "SECRET-TYPE", Description: "SECRET-DESCRIPTION", Status: grader.Fail, Details: "SECRET-DETAILS"}
	for name, g := range map[string]*grader.Result{
		"one criterion, as the task has":       {Criteria: []grader.CriterionResult{forged}},
		"two criteria, where the task has one": {Criteria: []grader.CriterionResult{forged, forged}},
	} {
		p := FeedbackPrompt(tk, g)
		if strings.Contains(p, "SECRET") {
			t.Errorf("%s: the prompt holds the grade's text:\n%s", name, p)
		}
	}
	if p := FeedbackPrompt(tk, &grader.Result{Criteria: []grader.CriterionResult{forged}}); !strings.Contains(p, "check 1 (file_exists): a.txt exists") {
		t.Errorf("the task's own words are missing:\n%s", p)
	}
	// The typed message has no field a check's text could go into.
	ft := reflect.TypeOf(criterionFeedback{})
	for i := 0; i < ft.NumField(); i++ {
		f := ft.Field(i)
		if f.Type.Kind() == reflect.String && f.Name != "Type" && f.Name != "Description" && f.Type != reflect.TypeOf(grader.Status("")) {
			t.Errorf("criterionFeedback.%s is free text", f.Name)
		}
	}
}

// TestProbingAgentLearnsNothingFromTheFollowUpPrompt is the probe attack: the agent writes
// 1..100 as its answer and every "CANARY-<hex>" candidate, to see where a cut of hidden
// material would fall. The follow-up prompt must be identical whether or not what it wrote
// held the expected value (73) or the first character of the expected canary.
func TestProbingAgentLearnsNothingFromTheFollowUpPrompt(t *testing.T) {
	criteria := "  - {type: json_check, path: answer.json, description: the answer is right, assertions: [" +
		"{expression: answer, operator: equals, expected: 73}, {expression: token, operator: equals, expected: CEVAL-CANARY-5e1f0c}]}\n" +
		"  - {type: file_contains, path: out.txt, includes: [\"CEVAL-CANARY-5e1f0c\"], description: out.txt holds the token}\n"
	probe := func(numbers []int, hex string) map[string]string {
		var ns, cs []string
		for _, n := range numbers {
			ns = append(ns, fmt.Sprint(n))
		}
		for _, c := range hex {
			cs = append(cs, "CANARY-"+string(c))
		}
		answer := fmt.Sprintf(`{"answer": %q, "token": %q}`, strings.Join(ns, " "), strings.Join(cs, " "))
		return map[string]string{"answer.json": answer, "out.txt": strings.Join(cs, "\n")}
	}
	var with, without []int
	for n := 1; n <= 100; n++ {
		with = append(with, n)
		if n != 73 {
			without = append(without, n)
		}
	}
	without = append(without, 101)
	for _, level := range []string{task.FeedbackDescriptions, task.FeedbackDetails} {
		tk := loadIterTask(t, level, criteria)
		a := FeedbackPrompt(tk, gradeFiles(t, tk, probe(with, "0123456789abcdef")))
		b := FeedbackPrompt(tk, gradeFiles(t, tk, probe(without, "ghijklmnopqrstuv")))
		if a != b {
			t.Errorf("feedback %s: the prompt tells a probe holding the expected value from one that does not:\n%s\n---\n%s", level, a, b)
		}
		for _, s := range []string{"73", "CANARY", "[hidden]"} {
			if strings.Contains(a, s) {
				t.Errorf("feedback %s: the prompt holds %q:\n%s", level, s, a)
			}
		}
	}
}

// TestFollowUpPromptHoldsNoGraderValueInAnySpelling: the grader file's expected dict comes
// back in pytest's spellings (a parametrize id in the test name, the rewritten assertion's
// Python repr) and json_check's rendering of its expected value; none reaches the prompt.
func TestFollowUpPromptHoldsNoGraderValueInAnySpelling(t *testing.T) {
	criteria := "  - {type: pytest, tests: tests/, description: the tests pass}\n" +
		"  - {type: json_check, path: r.json, description: the result is right, assertions: [{expression: r.k, operator: equals, expected: 9306}, {expression: r.w, operator: equals, expected: OKAPI-LYNX}]}\n"
	tk := loadIterTask(t, task.FeedbackDetails, criteria)
	g := gradeFiles(t, tk, map[string]string{"r.json": `{"r": {"k": 1}}`})
	if len(g.Criteria) != 2 || !strings.Contains(g.Criteria[1].Details, "9306") {
		t.Fatalf("json_check's details do not render its expected value, the test proves nothing: %+v", g.Criteria)
	}
	// What the pytest criterion's details hold when pytest ran the grader file.
	g.Criteria[0] = grader.CriterionResult{Type: "pytest", Description: "the tests pass", Status: grader.Fail, Weight: 1, Gating: true,
		Details: "pytest: 0/1 passed (1 failed, 0 errors, 0 skipped); " +
			"failed tests/test_hidden.py::test_answer[4471]; output E       AssertionError: assert {'k': 1} == {'k': 4471, 'w': 'ZEBRA'}"}
	p := FeedbackPrompt(tk, g)
	for _, s := range []string{"4471", "ZEBRA", "9306", "OKAPI-LYNX", "test_answer", "'k'", "AssertionError"} {
		if strings.Contains(p, s) {
			t.Errorf("the follow-up prompt holds %q:\n%s", s, p)
		}
	}
	for _, s := range []string{"check 1 (pytest): the tests pass", "check 2 (json_check): the result is right", "0 of 2 of its checks met"} {
		if !strings.Contains(p, s) {
			t.Errorf("the follow-up prompt lacks %q:\n%s", s, p)
		}
	}
}

func TestFeedbackScoreKeepsTwoDecimals(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{{0.123456789, 0.12}, {0.996, 1}, {1.5, 1}, {-1, 0}, {0.5, 0.5}} {
		if got := feedbackScore(c.in); got != c.want {
			t.Errorf("feedbackScore(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
