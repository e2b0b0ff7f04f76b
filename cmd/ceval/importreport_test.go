package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportCoderEvalSummaryAndReport: the import ends with the summary line, and --report
// writes per input its notes and unmapped fields with reasons, its output and whether it
// validates (a template outside the tree, or absent from it, counts as needing material
// outside --root; a bad pattern does not).
func TestImportCoderEvalSummaryAndReport(t *testing.T) {
	src := t.TempDir()
	head := "task_id: %s\ninitial_prompt: p\nagent:\n  type: claude-code\n"
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("good.yaml", strings.Replace(head, "%s", "good", 1)+"success_criteria:\n  - type: file_exists\n    path: a\n")
	write("lossy.yaml", strings.Replace(head, "%s", "lossy", 1)+"success_criteria:\n  - type: file_exists\n    path: a\n  - type: uipath_eval\n  - type: llm_judge\n    prompt: grade it\n")
	write("far.yaml", strings.Replace(head, "%s", "far", 1)+"sandbox:\n  template_sources:\n    - type: template_dir\n      path: ../elsewhere\nsuccess_criteria:\n  - type: file_exists\n    path: a\n")
	write("absent.yaml", strings.Replace(head, "%s", "absent", 1)+"sandbox:\n  template_sources:\n    - type: template_dir\n      path: not-copied\nsuccess_criteria:\n  - type: file_exists\n    path: a\n")
	write("broken.yaml", strings.Replace(head, "%s", "broken", 1)+"success_criteria:\n  - type: file_matches_regex\n    path: a\n    pattern: \"(\"\n")
	report := filepath.Join(t.TempDir(), "r.json")
	r := ceval(t, "import", "coder-eval", "--out", t.TempDir(), "--report", report, src)
	if r.code != 1 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if last := lines[len(lines)-1]; last != "2 of 5 tasks validate, 2 need material outside --root, 1 have unmapped criteria" {
		t.Errorf("last line %q\n%s", last, r.stdout)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Files []reportFile `json:"files"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	by := map[string]reportFile{}
	for _, f := range got.Files {
		by[filepath.Base(f.Input)] = f
	}
	if f := by["good.yaml"]; !f.Validates || f.Output == "" || len(f.Unmapped) != 0 {
		t.Errorf("good: %+v", f)
	}
	lossy := by["lossy.yaml"]
	if !lossy.Validates || len(lossy.Unmapped) != 1 || lossy.Unmapped[0].Field != "success_criteria[1] (uipath_eval)" || lossy.Unmapped[0].Line != 8 || lossy.Unmapped[0].Reason == "" {
		t.Errorf("lossy: %+v", lossy)
	}
	if len(lossy.Mapped) == 0 || lossy.Mapped[0].Field != "success_criteria[2].prompt" {
		t.Errorf("lossy notes: %+v", lossy.Mapped)
	}
	if f := by["far.yaml"]; f.Validates || !f.NeedsOutsideRoot || !strings.Contains(f.Invalid, "leaves the task file's directory") {
		t.Errorf("far: %+v", f)
	}
	if f := by["absent.yaml"]; f.Validates || !f.NeedsOutsideRoot || !strings.Contains(f.Invalid, "not found") {
		t.Errorf("absent (material missing from the tree counts as needed material): %+v", f)
	}
	if f := by["broken.yaml"]; f.Validates || f.NeedsOutsideRoot {
		t.Errorf("broken (a bad pattern is not missing material): %+v", f)
	}
}

// TestImportHarborReport: import harbor takes --report too: per task its notes and unmapped
// fields (a test.sh that downloads at grading time, at its line), the output, and validity.
func TestImportHarborReport(t *testing.T) {
	report := filepath.Join(t.TempDir(), "r.json")
	r := ceval(t, "import", "harbor", "--out", t.TempDir(), "--report", report,
		"../../importer/testdata/conformance/harbor/tests-fetch", "../../importer/testdata/conformance/harbor/reward-txt")
	if r.code != 1 || !strings.Contains(r.stdout, "2 of 2 tasks validate") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Files []reportFile `json:"files"`
	}
	if err := json.Unmarshal(data, &got); err != nil || len(got.Files) != 2 {
		t.Fatalf("%v\n%s", err, data)
	}
	fetch := got.Files[0]
	// its download at test.sh:3, and pytest over busybox, which has no python3, at test.sh:5
	if !fetch.Validates || len(fetch.Unmapped) != 2 || fetch.Unmapped[0].Field != "tests/test.sh" || fetch.Unmapped[0].Line != 3 ||
		fetch.Unmapped[1].Field != "preamble" || fetch.Unmapped[1].Line != 5 {
		t.Errorf("tests-fetch: %+v", fetch)
	}
	if ok := got.Files[1]; !ok.Validates || len(ok.Unmapped) != 0 || len(ok.Mapped) == 0 {
		t.Errorf("reward-txt: %+v", ok)
	}
}
