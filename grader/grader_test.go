package grader

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

func TestFileExists(t *testing.T) {
	s := snap(t, tree{
		"hello.txt":       "hi",
		"out/":            "",
		"src/a/b/main.go": "package main",
		"link.txt":        "symlink:hello.txt",
		"links/only.md":   "symlink:/etc/hostname",
	})
	tests := []struct {
		name, path string
		status     Status
		score      float64
		detail     string
	}{
		{"a regular file", "hello.txt", Pass, 1, "hello.txt"},
		{"a directory", "out", Pass, 1, "out"},
		{"a glob over files", "src/**/*.go", Pass, 1, "main.go"},
		{"a glob at the top", "*.txt", Pass, 1, "hello.txt"},
		{"a missing file", "nope.txt", Fail, 0, "does not exist"},
		{"a glob matching nothing", "**/*.rs", Fail, 0, "nothing in the workspace matches"},
		{"a symlink is not followed", "link.txt", Fail, 0, `symlink to "hello.txt"`},
		{"a glob matching only a symlink", "links/*.md", Fail, 0, `symlink to "/etc/hostname"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := gradeOne(t, task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: tt.path}}, s)
			want(t, got, tt.status, tt.score, tt.detail)
		})
	}
}

func TestFileContains(t *testing.T) {
	s := snap(t, tree{"a.txt": "alpha beta gamma\nTODO: delta\n"})
	tests := []struct {
		name               string
		includes, excludes []string
		threshold          float64
		status             Status
		score              float64
		detail             string
	}{
		{"every include present", []string{"alpha", "gamma"}, nil, 0, Pass, 1, "2/2"},
		{"half the includes", []string{"alpha", "omega"}, nil, 0, Fail, 0.5, `missing "omega"`},
		{"an exclude present", nil, []string{"TODO"}, 0, Fail, 0, `contains excluded "TODO"`},
		{"excludes absent", nil, []string{"FIXME", "XXX"}, 0, Pass, 1, ""},
		{"mean over both categories", []string{"alpha"}, []string{"TODO", "FIXME"}, 0, Fail, 0.75, "2/3"},
		{"case matters", []string{"ALPHA"}, nil, 0, Fail, 0, `missing "ALPHA"`},
		{"an explicitly empty list asks nothing", []string{}, nil, 0, Pass, 1, ""},
		{"half meets a 0.5 threshold", []string{"alpha", "omega"}, nil, 0.5, Pass, 0.5, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := task.Criterion{Type: task.FileContains, PassThreshold: tt.threshold, Spec: &task.FileContainsSpec{Path: "a.txt", Includes: tt.includes, Excludes: tt.excludes}}
			want(t, gradeOne(t, c, s), tt.status, tt.score, tt.detail)
		})
	}
}

func TestFileMatchesRegex(t *testing.T) {
	s := snap(t, tree{"hello.txt": "first line\nHello, ceval!\n"})
	tests := []struct {
		pattern string
		status  Status
		score   float64
	}{
		{`Hello, \w+!`, Pass, 1},
		{`(?m)^Hello, [a-z]+!$`, Pass, 1},
		{`^Hello`, Fail, 0}, // not multiline: ^ is the start of the text
		{`(?i)HELLO`, Pass, 1},
		{`Goodbye`, Fail, 0},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			c := task.Criterion{Type: task.FileMatchesRegex, Spec: &task.FileMatchesRegexSpec{Path: "hello.txt", Pattern: tt.pattern}}
			want(t, gradeOne(t, c, s), tt.status, tt.score, "pattern")
		})
	}
	t.Run("a pattern that does not compile is ceval's error", func(t *testing.T) {
		c := task.Criterion{Type: task.FileMatchesRegex, Spec: &task.FileMatchesRegexSpec{Path: "hello.txt", Pattern: `(`}}
		want(t, gradeOne(t, c, s), Error, 0, "does not compile")
	})
}

func TestFileCheck(t *testing.T) {
	s := snap(t, tree{"main.go": "package main\n\nfunc main() { panic(\"x\") }\n"})
	p := func(pattern string, must bool) task.PatternCheck {
		return task.PatternCheck{Pattern: pattern, MustMatch: must}
	}
	tests := []struct {
		name               string
		includes, excludes []string
		patterns           []task.PatternCheck
		status             Status
		score              float64
		detail             string
	}{
		{"patterns all as required", nil, nil, []task.PatternCheck{p(`func main\(\)`, true), p(`os\.Exit`, false)}, Pass, 1, "2/2"},
		{"a pattern that must match does not", nil, nil, []task.PatternCheck{p(`fmt\.Println`, true)}, Fail, 0, "does not match"},
		{"a pattern that must not match does", nil, nil, []task.PatternCheck{p(`panic\(`, false)}, Fail, 0, "matches but must not"},
		{"two of three patterns", nil, nil, []task.PatternCheck{p(`package main`, true), p(`func`, true), p(`panic`, false)}, Fail, 2.0 / 3, ""},
		{"mean over three categories", []string{"package main"}, []string{"panic"}, []task.PatternCheck{p(`func`, true)}, Fail, 2.0 / 3, `contains excluded "panic"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := task.Criterion{Type: task.FileCheck, Spec: &task.FileCheckSpec{Path: "main.go", Includes: tt.includes, Excludes: tt.excludes, Patterns: tt.patterns}}
			want(t, gradeOne(t, c, s), tt.status, tt.score, tt.detail)
		})
	}
}

func TestClassificationMatch(t *testing.T) {
	s := snap(t, tree{"label.txt": "  positive\n\n", "lower.txt": "Positive", "odd.txt": "maybe"})
	allowed := []string{"positive", "negative", "neutral"}
	tests := []struct {
		name, path, expected string
		allowed              []string
		status               Status
		detail               string
	}{
		{"surrounding whitespace is trimmed", "label.txt", "positive", allowed, Pass, ""},
		{"a different allowed label", "label.txt", "negative", allowed, Fail, `expected "negative"`},
		{"case matters", "lower.txt", "positive", allowed, Fail, "not among the allowed labels"},
		{"a label outside allowed_labels", "odd.txt", "neutral", allowed, Fail, `"maybe" is not among the allowed labels`},
		{"no allowed_labels given", "odd.txt", "neutral", nil, Fail, `label "maybe", expected "neutral"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := task.Criterion{Type: task.ClassificationMatch, Spec: &task.ClassificationMatchSpec{Path: tt.path, ExpectedLabel: tt.expected, AllowedLabels: tt.allowed}}
			got := gradeOne(t, c, s)
			score := 0.0
			if tt.status == Pass {
				score = 1
			}
			want(t, got, tt.status, score, tt.detail)
		})
	}
}

// TestClassificationMatchRecordsBoundedLabels: the result carries the expected and the
// predicted label for the summary's precision and recall; a missing file predicts nothing,
// and a huge label (agent output) is not carried into result.json.
func TestClassificationMatchRecordsBoundedLabels(t *testing.T) {
	s := snap(t, tree{"label.txt": " negative\n", "huge.txt": strings.Repeat("x", MaxPredictedLabel+1)})
	for _, tt := range []struct {
		path, predicted string
	}{
		{"label.txt", "negative"},
		{"missing.txt", ""},
		{"huge.txt", ""},
	} {
		got := gradeOne(t, task.Criterion{Type: task.ClassificationMatch, Spec: &task.ClassificationMatchSpec{Path: tt.path, ExpectedLabel: "positive"}}, s)
		if got.Label == nil || *got.Label != (Label{Expected: "positive", Predicted: tt.predicted}) {
			t.Errorf("%s: label %+v, want predicted %q", tt.path, got.Label, tt.predicted)
		}
	}
	if got := gradeOne(t, task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: "label.txt"}}, s); got.Label != nil {
		t.Errorf("file_exists carries a label: %+v", got.Label)
	}
}

func TestExecutingCriteria(t *testing.T) {
	s := snap(t, tree{"a.txt": "x"})
	run := func(cmd string) task.Criterion {
		return crit(task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: cmd}})
	}
	t.Run("without an executor they are not graded", func(t *testing.T) {
		tk := newTask(run("pass"), crit(task.Criterion{Type: task.WASMCheck, Spec: &task.WASMSpec{Module: &task.File{Path: "/m.wasm"}}}))
		r := Grade(context.Background(), tk, s, Options{})
		for _, cr := range r.Criteria {
			want(t, cr, NotGraded, 0, "WASM sandbox")
		}
		if r.Status != TaskNotGraded {
			t.Errorf("task status %s, want %s", r.Status, TaskNotGraded)
		}
	})
	tests := []struct {
		cmd    string
		status Status
		score  float64
		detail string
	}{
		{"pass", Pass, 1, "ran"},
		{"half", Fail, 0.5, "ran"},
		{"too-much", Pass, 1, "ran"},
		{"error", Error, 0, "sandbox broke"},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			ex := &fakeExecutor{}
			tk := newTask(run(tt.cmd))
			tk.Reference = &task.Dir{Path: "/tasks/t/reference"}
			r := Grade(context.Background(), tk, s, Options{Executor: ex})
			want(t, r.Criteria[0], tt.status, tt.score, tt.detail)
			if len(ex.references) != 1 || ex.references[0] != tk.Reference {
				t.Errorf("executor got references %v, want the task's %v", ex.references, tk.Reference)
			}
		})
	}
}

func TestNamedRewardsAreKeptAndABadOneFailsEvenAtThresholdZero(t *testing.T) {
	s := snap(t, tree{})
	run := func(cmd string) task.Criterion {
		return crit(task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: cmd}})
	}
	c := run("rewards")
	c.StdoutScoring().ScoreFromStdout = true
	r := Grade(context.Background(), newTask(c), s, Options{Executor: &fakeExecutor{}})
	want(t, r.Criteria[0], Fail, 0.75, `rewards "correctness"=1, "performance"=0.5; score 0.75 (mean of 2)`)
	if got := r.Criteria[0].Rewards; len(got) != 2 || got["correctness"] != 1 || got["performance"] != 0.5 {
		t.Errorf("rewards %v, want correctness 1 and performance 0.5 kept", got)
	}
	c = run("bad-reward")
	c.StdoutScoring().ScoreFromStdout, c.PassThreshold = true, 0
	r = Grade(context.Background(), newTask(c), s, Options{Executor: &fakeExecutor{}})
	want(t, r.Criteria[0], Fail, 0, `reward "correctness" is the string "high", not a number from 0 to 1`)
	if r.Status != "FAILURE" {
		t.Errorf("task %s, want FAILURE", r.Status)
	}
}

func TestScoring(t *testing.T) {
	s := snap(t, tree{"a.txt": "one two three"})
	contains := func(weight, threshold float64, includes ...string) task.Criterion {
		return task.Criterion{Type: task.FileContains, Weight: weight, PassThreshold: threshold, Spec: &task.FileContainsSpec{Path: "a.txt", Includes: includes}}
	}
	tests := []struct {
		name     string
		criteria []task.Criterion
		score    float64
		status   string
	}{
		{"weighted mean", []task.Criterion{contains(3, 0.9, "one"), contains(1, 0.9, "nine")}, 0.75, TaskFailure},
		{"weights are relative", []task.Criterion{contains(1, 0.5, "one", "nine"), contains(1, 0.9, "two")}, 0.75, TaskSuccess},
		{"weight 0 neither scores nor gates", []task.Criterion{contains(1, 0.9, "one"), contains(0, 0.9, "nine")}, 1, TaskSuccess},
		{"only informational criteria", []task.Criterion{contains(0, 0.9, "one")}, 0, TaskSuccess},
		{"score equal to the threshold passes", []task.Criterion{contains(1, 0.5, "one", "nine")}, 0.5, TaskSuccess},
		{"a thirds score equal to a thirds threshold passes", []task.Criterion{contains(1, 2.0/3, "one", "two", "nine")}, 2.0 / 3, TaskSuccess},
		{"score just under the threshold fails", []task.Criterion{contains(1, 0.5000001, "one", "nine")}, 0.5, TaskFailure},
		{"threshold 0 passes a score of 0", []task.Criterion{contains(1, 0, "nine")}, 0, TaskSuccess},
		{"threshold 0 does not pass a missing file", []task.Criterion{{Type: task.FileContains, Weight: 1, Spec: &task.FileContainsSpec{Path: "gone.txt", Includes: []string{"x"}}}}, 0, TaskFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Grade(context.Background(), newTask(tt.criteria...), s, Options{})
			if !near(r.Score, tt.score) || r.Status != tt.status {
				t.Errorf("got %s score %v, want %s score %v; criteria %+v", r.Status, r.Score, tt.status, tt.score, r.Criteria)
			}
			for i, cr := range r.Criteria {
				if cr.Gating != (tt.criteria[i].Weight > 0) || cr.Weight != tt.criteria[i].Weight {
					t.Errorf("criterion %d: gating %v weight %v for weight %v", i, cr.Gating, cr.Weight, tt.criteria[i].Weight)
				}
			}
		})
	}
}

func TestStatusAggregation(t *testing.T) {
	s := snap(t, tree{"a.txt": "x"})
	pass := crit(task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: "a.txt"}})
	fail := crit(task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: "b.txt"}})
	notGraded := crit(task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: "pass"}})
	broken := crit(task.Criterion{Type: task.FileMatchesRegex, Spec: &task.FileMatchesRegexSpec{Path: "a.txt", Pattern: "("}})
	info := func(c task.Criterion) task.Criterion { c.Weight = 0; return c }
	tests := []struct {
		name     string
		criteria []task.Criterion
		status   string
	}{
		{"all pass", []task.Criterion{pass, pass}, TaskSuccess},
		{"one fails", []task.Criterion{pass, fail}, TaskFailure},
		{"not graded beats failure", []task.Criterion{fail, notGraded, pass}, TaskNotGraded},
		{"error beats not graded", []task.Criterion{notGraded, broken, fail}, TaskError},
		{"error alone", []task.Criterion{pass, broken}, TaskError},
		{"informational failure does not gate", []task.Criterion{pass, info(fail)}, TaskSuccess},
		{"informational not graded does not gate", []task.Criterion{pass, info(notGraded)}, TaskSuccess},
		{"informational error does not gate", []task.Criterion{fail, info(broken)}, TaskFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Grade(context.Background(), newTask(tt.criteria...), s, Options{})
			if r.Status != tt.status {
				t.Errorf("task status %s, want %s; criteria %+v", r.Status, tt.status, r.Criteria)
			}
		})
	}
}

func TestCriteriaKeepTaskOrder(t *testing.T) {
	s := snap(t, tree{"a.txt": "x"})
	types := []string{task.RunCommand, task.FileExists, task.FileContains, task.FileExists}
	var cs []task.Criterion
	for i, typ := range types {
		c := task.Criterion{Type: typ, Description: strings.Repeat("d", i+1), Spec: &task.RunCommandSpec{Command: "c"}}
		switch typ {
		case task.FileExists:
			c.Spec = &task.FileExistsSpec{Path: "a.txt"}
		case task.FileContains:
			c.Spec = &task.FileContainsSpec{Path: "a.txt", Includes: []string{"x"}}
		}
		cs = append(cs, crit(c))
	}
	r := Grade(context.Background(), newTask(cs...), s, Options{})
	for i, cr := range r.Criteria {
		if cr.Type != types[i] || cr.Description != cs[i].Description {
			t.Errorf("criterion %d is %s %q, want %s %q", i, cr.Type, cr.Description, types[i], cs[i].Description)
		}
	}
}

func TestCancelledGradeIsError(t *testing.T) {
	s := snap(t, tree{"a.txt": "x"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := Grade(ctx, newTask(crit(task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: "a.txt"}})), s, Options{})
	if r.Status != TaskError || r.Criteria[0].Status != Error {
		t.Errorf("cancelled grade: task %s, criterion %s; want ERROR for both", r.Status, r.Criteria[0].Status)
	}
}

func TestResultJSONNames(t *testing.T) {
	s := take(t, makeTree(t, tree{"a.txt": "x", "big.txt": "0123456789"}), snapshotLimits(4))
	r := Grade(context.Background(), newTask(crit(task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: "a.txt"}})), s, Options{})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"task_id", "status", "score", "criteria", "snapshot_notes"} {
		if _, ok := m[k]; !ok {
			t.Errorf("result JSON lacks %q: %s", k, b)
		}
	}
	c := m["criteria"].([]any)[0].(map[string]any)
	for _, k := range []string{"type", "description", "status", "score", "passed", "weight", "gating", "details"} {
		if _, ok := c[k]; !ok {
			t.Errorf("criterion JSON lacks %q: %s", k, b)
		}
	}
}

func TestDetailsAreCappedAndPrintable(t *testing.T) {
	label := "\x1b[2J" + strings.Repeat("é", 5000)
	s := snap(t, tree{"label.txt": label})
	got := gradeOne(t, task.Criterion{Type: task.ClassificationMatch, Spec: &task.ClassificationMatchSpec{Path: "label.txt", ExpectedLabel: "ok"}}, s)
	if strings.ContainsRune(got.Details, '\x1b') {
		t.Errorf("details carry a raw escape: %q", got.Details)
	}
	if len(got.Details) > maxDetailBytes+len("… (truncated)") {
		t.Errorf("details are %d bytes", len(got.Details))
	}
	if math.IsNaN(got.Score) || got.Status != Fail {
		t.Errorf("got %s %v", got.Status, got.Score)
	}
}

// Parts counts the checks a criterion lists from the task's structure, for the follow-up
// prompt; criteria that list none have no Parts.
func TestPartsCountTheChecksTheTaskLists(t *testing.T) {
	s := snap(t, tree{"a.txt": "alpha beta\n", "r.json": `{"n": 3}`})
	for _, c := range []struct {
		name string
		c    task.Criterion
		want *Parts
	}{
		{"file_contains includes and excludes", task.Criterion{Type: task.FileContains, Spec: &task.FileContainsSpec{Path: "a.txt", Includes: []string{"alpha", "omega"}, Excludes: []string{"beta"}}}, &Parts{Met: 1, Total: 3}},
		{"file_check patterns", task.Criterion{Type: task.FileCheck, Spec: &task.FileCheckSpec{Path: "a.txt", Patterns: []task.PatternCheck{{Pattern: "al+", MustMatch: true}, {Pattern: "z", MustMatch: true}}}}, &Parts{Met: 1, Total: 2}},
		{"json_check assertions", task.Criterion{Type: task.JSONCheck, Spec: &task.JSONCheckSpec{Path: "r.json", Assertions: []task.Assertion{{Expression: "n", Operator: "equals", Expected: 3.0}, {Expression: "n", Operator: "gt", Expected: 5.0}}}}, &Parts{Met: 1, Total: 2}},
		{"a missing file", task.Criterion{Type: task.FileContains, Spec: &task.FileContainsSpec{Path: "none.txt", Includes: []string{"alpha"}}}, nil},
		{"file_exists", task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: "a.txt"}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := gradeOne(t, c.c, s).Parts; !reflect.DeepEqual(got, c.want) {
				t.Errorf("parts %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestClassificationMatchUpToCase: case_sensitive: false (coder_eval's default) matches the
// label up to case and records the allowed label's spelling; by default the match is exact.
func TestClassificationMatchUpToCase(t *testing.T) {
	s := snap(t, tree{"label.txt": "Positive\n", "other.txt": "POSITIVES\n"})
	allowed := []string{"positive", "negative"}
	for _, tt := range []struct {
		path      string
		fold      bool
		status    Status
		predicted string
	}{
		{"label.txt", true, Pass, "positive"},
		{"label.txt", false, Fail, "Positive"},
		{"other.txt", true, Fail, "POSITIVES"},
	} {
		spec := &task.ClassificationMatchSpec{Path: tt.path, ExpectedLabel: "POSITIVE", AllowedLabels: allowed, CaseInsensitive: tt.fold}
		if !tt.fold {
			spec.ExpectedLabel = "positive"
		}
		c := task.Criterion{Type: task.ClassificationMatch, Spec: spec}
		got := gradeOne(t, c, s)
		if got.Status != tt.status {
			t.Errorf("%s fold=%v: %s (%s), want %s", tt.path, tt.fold, got.Status, got.Details, tt.status)
		}
		if got.Label == nil || *got.Label != (Label{Expected: "positive", Predicted: tt.predicted}) {
			t.Errorf("%s fold=%v: label %+v, want expected positive, predicted %q", tt.path, tt.fold, got.Label, tt.predicted)
		}
	}
}

// TestAGlobPathReadsTheOneFileItMatches: a reading criterion's path may be a glob (coder_eval's
// are) that must match exactly one regular file: none or several fail, saying which.
func TestAGlobPathReadsTheOneFileItMatches(t *testing.T) {
	s := snap(t, tree{"src/app.py": "import sys\n", "out/a.json": `{"ok": true}`, "out/b.json": `{"ok": true}`})
	for _, tt := range []struct {
		c      task.Criterion
		status Status
		detail string
	}{
		{task.Criterion{Type: task.FileContains, Spec: &task.FileContainsSpec{Path: "src/*.py", Includes: []string{"import sys"}}}, Pass, ""},
		{task.Criterion{Type: task.FileContains, Spec: &task.FileContainsSpec{Path: "**/app.py", Includes: []string{"import sys"}}}, Pass, ""},
		{task.Criterion{Type: task.FileContains, Spec: &task.FileContainsSpec{Path: "lib/*.py", Includes: []string{"x"}}}, Fail, "no file in the workspace matches lib/*.py"},
		{task.Criterion{Type: task.JSONCheck, Spec: &task.JSONCheckSpec{Path: "out/*.json"}}, Fail, "2 files match out/*.json"},
	} {
		got := gradeOne(t, tt.c, s)
		if got.Status != tt.status || !strings.Contains(got.Details, tt.detail) {
			t.Errorf("%s %+v: %s %q, want %s with %q", tt.c.Type, tt.c.Spec, got.Status, got.Details, tt.status, tt.detail)
		}
	}
}
