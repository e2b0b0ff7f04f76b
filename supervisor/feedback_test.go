package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// loadIterTask loads a task with a reference directory holding secret.txt.
func loadIterTask(t *testing.T, feedback, criteria string) *task.Task {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "ref"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ref", "secret.txt"), []byte("the reference answer is ZEBRA-PLUTO-4471\n"), 0o644); err != nil {
		t.Fatal(err)
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

// TestFollowUpPromptDoesNotRevealReferenceOrExpectations grades an iteration whose failed
// criteria's details quote a reference file, a hidden expected output, a fragment of it
// and a short expected value, and checks the follow-up prompt at each feedback level: the
// descriptions appear only from descriptions on, the details only with details, and no
// hidden text or fragment of one ever does.
func TestFollowUpPromptDoesNotRevealReferenceOrExpectations(t *testing.T) {
	criteria := "  - {type: file_contains, path: out.txt, includes: [\"MAGIC-TOKEN-93817\"], description: out.txt has the magic token}\n" +
		"  - {type: file_contains, path: n.txt, includes: [\"42\"], description: n.txt holds the answer}\n" +
		"  - {type: file_exists, path: done.txt, description: done.txt exists}\n"
	graded := func(tk *task.Task) *grader.Result {
		return &grader.Result{Status: grader.TaskFailure, Criteria: []grader.CriterionResult{
			{Description: "out.txt has the magic token", Details: "missing \"MAGIC-TOKEN-93817\"; the reference says: the reference answer is ZEBRA-PLUTO-4471"},
			{Description: "n.txt holds the answer", Details: "missing 42 (found 421); fragment TOKEN-93817 and PLUTO-44; open " + tk.Reference.Path + "/x: denied"},
			{Description: "done.txt exists", Details: "done.txt does not exist", Passed: true},
		}}
	}
	secrets := []string{"MAGIC-TOKEN-93817", "TOKEN-93817", "ZEBRA-PLUTO-4471", "PLUTO-44", "reference answer is", " 42 ", "/ref/x"}
	for _, c := range []struct {
		level          string
		descs, details bool
	}{
		{task.FeedbackNone, false, false},
		{task.FeedbackDescriptions, true, false},
		{task.FeedbackDetails, true, true},
	} {
		tk := loadIterTask(t, c.level, criteria)
		var hidden [][]byte
		if c.level == task.FeedbackDetails {
			var err error
			if hidden, err = HiddenMaterial(tk); err != nil {
				t.Fatal(err)
			}
		}
		p := FeedbackPrompt(tk, graded(tk), hidden)
		for _, s := range append(secrets, tk.Dir) {
			if strings.Contains(p, s) {
				t.Errorf("feedback %s: the follow-up prompt reveals %q:\n%s", c.level, s, p)
			}
		}
		if got := strings.Contains(p, "out.txt has the magic token"); got != c.descs {
			t.Errorf("feedback %s: failed description shown %v, want %v:\n%s", c.level, got, c.descs, p)
		}
		if strings.Contains(p, "done.txt exists") {
			t.Errorf("feedback %s: a passed criterion is in the prompt:\n%s", c.level, p)
		}
		if got := strings.Contains(p, "found 421") && strings.Contains(p, "missing "+hiddenCut); got != c.details {
			t.Errorf("feedback %s: details shown (cut) %v, want %v:\n%s", c.level, got, c.details, p)
		}
	}
}

func TestCutHiddenCutsRunsAndShortWords(t *testing.T) {
	hidden := [][]byte{[]byte("abcdefghijklmnop"), []byte("42\n"), []byte("x")}
	for _, c := range []struct{ in, want string }{
		{"see abcdefghij here", "see [hidden] here"},
		{"fragment ijklmnop!", "fragment [hidden]!"},
		{"short abcdefg stays", "short abcdefg stays"},
		{"got 42, not 421", "got [hidden], not 421"},
		{"x marks; box stays", "[hidden] marks; box stays"},
	} {
		if got := cutHidden(c.in, hidden); got != c.want {
			t.Errorf("cutHidden(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Details quote what they show: a json_check's numeric expected value and a multi-line
// expected output (escaped by %q) must be cut from a details follow-up like any raw string.
func TestFollowUpDetailsCutQuotedAndNumericExpectations(t *testing.T) {
	criteria := "  - {type: json_check, path: r.json, description: the answer is right, assertions: [{expression: answer, operator: equals, expected: 1234.5}]}\n" +
		"  - {type: file_contains, path: out.txt, description: the output is the sequence, includes: [\"3\\n1\\n4\\n1\\n5\\n9\\n2\\n6\\n\"]}\n"
	tk := loadIterTask(t, task.FeedbackDetails, criteria)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "r.json"), []byte(`{"answer": 7}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "out.txt"), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.Take(ws, filepath.Join(t.TempDir(), "snap"), snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	g := grader.Grade(context.Background(), tk, snap, grader.Options{})
	// The grader's own quoting of a multi-line expected output (as run_command prints it).
	g.Criteria = append(g.Criteria, grader.CriterionResult{Description: "stdout is the sequence",
		Details: fmt.Sprintf("stdout %q does not match (exact) %q", "0\n", "3\n1\n4\n1\n5\n9\n2\n6\n")})
	hidden, err := HiddenMaterial(tk)
	if err != nil {
		t.Fatal(err)
	}
	p := FeedbackPrompt(tk, g, hidden)
	for _, s := range []string{"1234.5", `3\n1\n4\n1`, `1\n5\n9\n2\n6`} {
		if strings.Contains(p, s) {
			t.Errorf("the follow-up prompt reveals %q:\n%s", s, p)
		}
	}
	if !strings.Contains(p, "the answer is right") || !strings.Contains(p, "got 7") && !strings.Contains(p, "7") {
		t.Errorf("the failed check or what the agent wrote is missing:\n%s", p)
	}
}
