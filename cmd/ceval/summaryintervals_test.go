package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/report"
)

// The terminal table and the Markdown summary of `ceval report` show summary.json's
// intervals (task-clustered per variant, paired differences) and say what they are; 4 of 4
// passes is never [1.00, 1.00].
func TestReportTerminalAndMarkdownShowTheSummarysIntervals(t *testing.T) {
	exp := t.TempDir()
	var entries []string
	outcomes := map[string]map[string][]bool{
		"strong": {"a": {true, true, true, true}, "b": {true, true, true, true}},
		"weak":   {"a": {false, false, false, false}, "b": {true, false, false, false}},
	}
	for _, v := range []string{"strong", "weak"} {
		for _, task := range []string{"a", "b"} {
			entries = append(entries, fmt.Sprintf(`{"variant_id":%q,"task_id":%q,"task_path":"/t.yaml","task_sha256":""}`, v, task))
			for rep, pass := range outcomes[v][task] {
				status, score := "FAILURE", 0
				if pass {
					status, score = "SUCCESS", 1
				}
				dir := filepath.Join(exp, v, task, fmt.Sprint(rep+1))
				os.MkdirAll(dir, 0o700)
				res := fmt.Sprintf(`{"task_id":%q,"status":%q,"score":%d,"criteria":[],"run_id":"r","variant":%q,"repeat":%d,"complete":true}`, task, status, score, v, rep+1)
				os.WriteFile(filepath.Join(dir, "result.json"), []byte(res), 0o600)
			}
		}
	}
	plan := `{"experiment_id":"x","experiment":"/x.yaml","repeats":4,"variants":["strong","weak"],"entries":[` + strings.Join(entries, ",") + `]}`
	os.WriteFile(filepath.Join(exp, "plan.json"), []byte(plan), 0o600)
	text := ceval(t, "report", exp)
	md := ceval(t, "report", exp, "--format", "markdown")
	if text.code != 0 || md.code != 0 {
		t.Fatalf("report: exit %d / %d\n%s%s%s", text.code, md.code, text.stderr, md.stderr, text.stdout)
	}
	data, err := os.ReadFile(filepath.Join(exp, report.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var s report.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Variants) != 2 || len(s.Differences) != 1 {
		t.Fatalf("summary: %d variants, %d differences", len(s.Variants), len(s.Differences))
	}
	for _, v := range s.Variants {
		ci := report.CIText(v.PassRateCI95)
		if ci == "[1.00, 1.00]" || ci == "[0.00, 0.00]" {
			t.Errorf("%s: degenerate interval %s", v.VariantID, ci)
		}
		if !strings.Contains(text.stdout, ci) {
			t.Errorf("the terminal table lacks %s's interval %s:\n%s", v.VariantID, ci, text.stdout)
		}
		if want := fmt.Sprintf("%.2f to %.2f", v.PassRateCI95[0], v.PassRateCI95[1]); !strings.Contains(md.stdout, want) {
			t.Errorf("the Markdown lacks %s's interval %s:\n%s", v.VariantID, want, md.stdout)
		}
	}
	d := s.Differences[0]
	if ci := report.DiffCIText(d.PassRateDiffCI95); !strings.Contains(text.stdout, ci) {
		t.Errorf("the terminal lacks the paired difference %s:\n%s", ci, text.stdout)
	}
	if want := fmt.Sprintf("%+.2f to %+.2f", d.PassRateDiffCI95[0], d.PassRateDiffCI95[1]); !strings.Contains(md.stdout, want) {
		t.Errorf("the Markdown lacks the paired difference %s:\n%s", want, md.stdout)
	}
	for _, out := range []string{text.stdout, md.stdout} {
		if !strings.Contains(out, "clustered by task") {
			t.Errorf("no note on what the intervals are:\n%s", out)
		}
	}
}
