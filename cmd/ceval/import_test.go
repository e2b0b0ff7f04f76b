package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
