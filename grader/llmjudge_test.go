package grader

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"ceval.dev/ceval/judge"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// judgedPrompt grades c (answered by a fixture) against s and returns its result and the
// user message the judge was sent.
func judgedPrompt(t *testing.T, s task.LLMJudgeSpec, tr tree) (CriterionResult, string) {
	t.Helper()
	s.Rubric = "Score 1 if NOTES.md explains the fix."
	s.JudgeAnswers = []string{`{"score": 1, "reasons": "ok"}`}
	if s.MaxFileBytes == 0 {
		s.MaxFileBytes = task.DefaultJudgeFileBytes
	}
	var log bytes.Buffer
	c := crit(task.Criterion{Type: task.LLMJudge, Spec: &s})
	r := Grade(context.Background(), newTask(c), snap(t, tr), Options{Judge: judge.NewReplay(&log, nil)})
	recs := record.ReadJudgeCalls(&log)
	if len(r.Criteria) != 1 || len(recs) != 1 {
		t.Fatalf("criteria %+v, %d judge calls", r.Criteria, len(recs))
	}
	return r.Criteria[0], recs[0].User
}

// A glob matching more files than the judge is shown cannot crowd out a file the criterion
// names, even one named after it; every file the cap leaves out is listed to the judge and
// in the criterion's details, with why.
func TestLLMJudgeFileCapKeepsNamedFilesAndListsWhatItLeavesOut(t *testing.T) {
	tr := tree{"NOTES.md": "the root cause is X"}
	for i := range 200 {
		tr[fmt.Sprintf("gen/f%03d.txt", i)] = "generated"
	}
	got, user := judgedPrompt(t, task.LLMJudgeSpec{Files: []string{"gen/*.txt", "NOTES.md"}}, tr)
	if !strings.Contains(user, `path="NOTES.md"`) || !strings.Contains(user, "the root cause is X") {
		t.Fatalf("the named file was not shown to the judge:\n%.2000s", user)
	}
	if n := strings.Count(user, "<<<DATA-") - 1; n != maxJudgeEntries { // one frame is the left-out list
		t.Errorf("%d files framed, want the cap %d", n, maxJudgeEntries)
	}
	leftOut := user[strings.Index(user, "LEFT OUT"):]
	for i := maxJudgeEntries - 1; i < 200; i++ { // NOTES.md took one of the cap's places
		if line := fmt.Sprintf("\"gen/f%03d.txt\": left out: over the file cap of %d files\n", i, maxJudgeEntries); !strings.Contains(leftOut, line) {
			t.Fatalf("%q is not in the left-out list:\n%s", line, leftOut)
		}
	}
	// What the judge did not see could fail the rubric: the judge's 1 cannot pass it.
	want(t, got, Fail, 0, fmt.Sprintf("73 files left out (over the file cap of %d files): gen/f127.txt, gen/f128.txt", maxJudgeEntries))
	want(t, got, Fail, 0, fmt.Sprintf("the judge was not shown all of the agent's files: 73 files were left out by its file cap of %d files. Its verdict cannot pass what it did not see", maxJudgeEntries))
	if !strings.Contains(got.Details, "gen/f199.txt") {
		t.Errorf("details do not name the last file left out: %s", got.Details)
	}
}

// Files past the judge's total input cap, and files cut to max_file_bytes, are said: to
// the judge and in the details.
func TestLLMJudgeByteCapsSayWhatTheyCutAndLeaveOut(t *testing.T) {
	big := strings.Repeat("x", 300<<10)
	got, user := judgedPrompt(t, task.LLMJudgeSpec{Files: []string{"a.txt", "b.txt", "c.txt"}, MaxFileBytes: task.MaxJudgeFileBytes},
		tree{"a.txt": big, "b.txt": big, "c.txt": big})
	if !strings.Contains(user, fmt.Sprintf(`"c.txt": left out: the judge's input cap of %d KiB was reached`, maxJudgeInputBytes>>10)) {
		t.Errorf("the judge was not told c.txt was left out:\n%s", user[strings.LastIndex(user, ">>>\n"):])
	}
	if strings.Count(user, "shown=262144 (cut)") != 2 {
		t.Errorf("the judge was not told a.txt and b.txt were cut")
	}
	want(t, got, Fail, 0, "1 file left out (the judge's input cap of 512 KiB was reached): c.txt")
	want(t, got, Fail, 0, "2 files cut (max_file_bytes 262144, or the judge's input cap of 512 KiB): a.txt (262144 of 307200 bytes), b.txt (262144 of 307200 bytes)")
	want(t, got, Fail, 0, "the judge was not shown all of the agent's files: 1 file was left out by its input cap of 512 KiB of files in all. Its verdict")
}

// The damning part pushed past the judge's input caps (issue 32 item 5): padding files
// ahead of it, or decoys a glob matches ahead of the file that fails the rubric. The judge
// (here a fixture that passes whatever it is shown) never sees it, so its 1 cannot count;
// a file cut only to max_file_bytes, the author's window, is the judge's to weigh.
func TestLLMJudgeCannotPassWhatTheInputCapsHid(t *testing.T) {
	pad := strings.Repeat("# fine\n", 40<<10) // 280 KiB each
	for name, tc := range map[string]struct {
		c    task.LLMJudgeSpec
		tr   tree
		pass bool
	}{
		"padding files first": {task.LLMJudgeSpec{Files: []string{"a.py", "b.py", "solution.py"}, MaxFileBytes: task.MaxJudgeFileBytes},
			tree{"a.py": pad, "b.py": pad, "solution.py": "raise NotImplementedError  # damning\n"}, false},
		"decoys a glob matches first": {task.LLMJudgeSpec{Files: []string{"src/*.py"}},
			func() tree {
				tr := tree{"src/zz_solution.py": "raise NotImplementedError  # damning\n"}
				for i := range maxJudgeEntries {
					tr[fmt.Sprintf("src/a%03d.py", i)] = "x = 1\n"
				}
				return tr
			}(), false},
		"cut to max_file_bytes only": {task.LLMJudgeSpec{Files: []string{"solution.py"}, MaxFileBytes: 1024},
			tree{"solution.py": pad}, true},
	} {
		got, _ := judgedPrompt(t, tc.c, tc.tr)
		if tc.pass != (got.Status == Pass) {
			t.Errorf("%s: %s %v, want pass %v: %s", name, got.Status, got.Score, tc.pass, got.Details)
		}
	}
}

// A judge shown everything gets no left-out list and the details no note.
func TestLLMJudgeShownEverythingSaysNothingLeftOut(t *testing.T) {
	got, user := judgedPrompt(t, task.LLMJudgeSpec{Files: []string{"NOTES.md"}}, tree{"NOTES.md": "fine"})
	if strings.Contains(user, "LEFT OUT") || strings.Contains(got.Details, "not shown") {
		t.Fatalf("details %q, prompt:\n%s", got.Details, user)
	}
}

// The failure says, in a sentence, how many files each input cap left out or cut: here one
// file cut short of its max_file_bytes by the 512 KiB of all files (a cut to max_file_bytes
// alone is the author's window and is not counted).
func TestLLMJudgeCapFailureSaysHowManyFilesEachCapHid(t *testing.T) {
	got, _ := judgedPrompt(t, task.LLMJudgeSpec{Files: []string{"a.txt", "b.txt", "c.txt"}, MaxFileBytes: task.MaxJudgeFileBytes},
		tree{"a.txt": strings.Repeat("a", 300<<10), "b.txt": strings.Repeat("b", 200<<10), "c.txt": strings.Repeat("c", 100<<10)})
	want(t, got, Fail, 0, "llm_judge: the judge was not shown all of the agent's files: 1 file was cut short by its input cap of 512 KiB of files in all. Its verdict cannot pass what it did not see, so the criterion fails whatever it scored")
}
