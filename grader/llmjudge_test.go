package grader

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"ceval.dev/ceval/judge"
	"ceval.dev/ceval/task"
)

// judgedPrompt grades c (answered by a fixture) against s and returns its result and the
// user message the judge was sent.
func judgedPrompt(t *testing.T, c task.Criterion, tr tree) (CriterionResult, string) {
	t.Helper()
	c.Type, c.Rubric = task.LLMJudge, "Score 1 if NOTES.md explains the fix."
	c.JudgeAnswers = []string{`{"score": 1, "reasons": "ok"}`}
	if c.MaxFileBytes == 0 {
		c.MaxFileBytes = task.DefaultJudgeFileBytes
	}
	var log bytes.Buffer
	r := Grade(context.Background(), newTask(crit(c)), snap(t, tr), Options{Judge: judge.NewReplay(&log, nil)})
	recs := judge.ReadRecords(&log)
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
	got, user := judgedPrompt(t, task.Criterion{Files: []string{"gen/*.txt", "NOTES.md"}}, tr)
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
	want(t, got, Pass, 1, fmt.Sprintf("73 files left out (over the file cap of %d files): gen/f127.txt, gen/f128.txt", maxJudgeEntries))
	if !strings.Contains(got.Details, "gen/f199.txt") {
		t.Errorf("details do not name the last file left out: %s", got.Details)
	}
}

// Files past the judge's total input cap, and files cut to max_file_bytes, are said: to
// the judge and in the details.
func TestLLMJudgeByteCapsSayWhatTheyCutAndLeaveOut(t *testing.T) {
	big := strings.Repeat("x", 300<<10)
	got, user := judgedPrompt(t, task.Criterion{Files: []string{"a.txt", "b.txt", "c.txt"}, MaxFileBytes: task.MaxJudgeFileBytes},
		tree{"a.txt": big, "b.txt": big, "c.txt": big})
	if !strings.Contains(user, fmt.Sprintf(`"c.txt": left out: the judge's input cap of %d KiB was reached`, maxJudgeInputBytes>>10)) {
		t.Errorf("the judge was not told c.txt was left out:\n%s", user[strings.LastIndex(user, ">>>\n"):])
	}
	if strings.Count(user, "shown=262144 (cut)") != 2 {
		t.Errorf("the judge was not told a.txt and b.txt were cut")
	}
	want(t, got, Pass, 1, "1 file left out (the judge's input cap of 512 KiB was reached): c.txt")
	want(t, got, Pass, 1, "2 files cut (max_file_bytes 262144, or the judge's input cap of 512 KiB): a.txt (262144 of 307200 bytes), b.txt (262144 of 307200 bytes)")
}

// A judge shown everything gets no left-out list and the details no note.
func TestLLMJudgeShownEverythingSaysNothingLeftOut(t *testing.T) {
	got, user := judgedPrompt(t, task.Criterion{Files: []string{"NOTES.md"}}, tree{"NOTES.md": "fine"})
	if strings.Contains(user, "LEFT OUT") || strings.Contains(got.Details, "not shown") {
		t.Fatalf("details %q, prompt:\n%s", got.Details, user)
	}
}
