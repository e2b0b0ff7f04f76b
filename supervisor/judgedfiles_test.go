package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/snapshot"
)

// A workspace of more files than a judge agent is handed is the agent's doing: judgedFiles
// says so with a grader.WorkspaceError (FAILURE), not a plain error (ERROR).
func TestJudgedFilesOfATooLargeWorkspaceIsTheWorkspacesFault(t *testing.T) {
	src := t.TempDir()
	for i := 0; i <= maxJudgedFiles; i++ {
		if err := os.WriteFile(filepath.Join(src, strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := snapshot.Take(src, filepath.Join(t.TempDir(), "snap"), snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = judgedFiles(s)
	var we *grader.WorkspaceError
	if !errors.As(err, &we) {
		t.Fatalf("judgedFiles: %v (%T), want a *grader.WorkspaceError", err, err)
	}
}
