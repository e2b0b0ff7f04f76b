package report

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/audit/verdict"
	"ceval.dev/ceval/record"
)

func writeAudit(t *testing.T, dir string, reps any) {
	t.Helper()
	data, err := json.Marshal(reps)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, verdict.File), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// setDigests gives the plan's entries digests, as ceval run records them.
func setDigests(t *testing.T, dir string, sha map[string]string) {
	t.Helper()
	plan, err := record.ReadPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range plan.Entries {
		plan.Entries[i].TaskSHA256 = sha[plan.Entries[i].Variant+"/"+plan.Entries[i].TaskID]
	}
	if err := record.WriteJSONAtomic(filepath.Join(dir, record.PlanFile), plan); err != nil {
		t.Fatal(err)
	}
}

// TestReportShowsEachTasksAuditVerdict: audit.json in the experiment's directory puts each
// task's verdict in summary.json, the markdown and the HTML report: the variant's own audit
// of the same digest first, else the task file's audit marked stale; a task never audited
// has none. Reasons written by hostile runs stay inert.
func TestReportShowsEachTasksAuditVerdict(t *testing.T) {
	dir := writeExperiment(t, map[string]map[string][]string{
		"v": {"a": {"SUCCESS"}, "b": {"SUCCESS"}, "c": {"FAILURE"}},
	}, []string{"v"}, []string{"a", "b", "c"}, 1)
	setDigests(t, dir, map[string]string{"v/a": "aaa", "v/b": "bbb", "v/c": "ccc"})
	writeAudit(t, dir, []verdict.Report{
		{TaskID: "a", Variant: "v", TaskSHA256: "aaa", Verdict: verdict.Hackable, Reasons: []string{"empty-tests reached SUCCESS, passing success_criteria[0] | <script>x</script>"}},
		{TaskID: "a", TaskSHA256: "other", Verdict: verdict.OK}, // the task file's audit: the variant's own wins
		{TaskID: "b", TaskSHA256: "old", Verdict: verdict.OK},   // another version: stale
	})
	e, s, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*TaskAudit{}
	for _, ts := range s.Variants[0].Tasks {
		got[ts.TaskID] = ts.Audit
	}
	if a := got["a"]; a == nil || a.Verdict != verdict.Hackable || a.Stale || len(a.Reasons) != 1 {
		t.Errorf("a: %+v", a)
	}
	if b := got["b"]; b == nil || b.Verdict != verdict.OK || !b.Stale {
		t.Errorf("b: %+v", b)
	}
	if got["c"] != nil {
		t.Errorf("c was never audited: %+v", got["c"])
	}
	md := string(Markdown(e, s))
	for _, want := range []string{"#### Audit verdicts", "| ` v ` | ` a ` | ` hackable ` | ` empty-tests reached SUCCESS, passing success_criteria[0] ¦ <script>x</script> ` |", "| ` v ` | ` b ` | ` ok ` | ` audited another version"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<tr data-verdict="hackable"><td>v</td><td>a</td>`, `ok (stale)`, "&lt;script&gt;x&lt;/script&gt;"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(string(page), "<script>x") {
		t.Error("a reason's markup reached report.html")
	}
}

// TestReportRefusesAnAuditJSONThatIsNotOne: an unknown verdict (which would become a CSS
// class and a claim) or a file that is not a list of reports fails the report, naming it.
func TestReportRefusesAnAuditJSONThatIsNotOne(t *testing.T) {
	for _, bad := range []any{
		[]map[string]any{{"task_id": "a", "verdict": "trust-me\" onload=\"x"}},
		map[string]any{"verdict": "ok"},
	} {
		dir := writeExperiment(t, map[string]map[string][]string{"v": {"a": {"SUCCESS"}}}, []string{"v"}, []string{"a"}, 1)
		writeAudit(t, dir, bad)
		if _, _, err := Write(dir); err == nil || !strings.Contains(err.Error(), verdict.File) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// TestReportImportsNoContainerd: reading run records and audit verdicts never pulls in the
// sandbox (containerd, gRPC, the supervisor or the audit runner).
func TestReportImportsNoContainerd(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "ceval.dev/ceval/report").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case strings.Contains(dep, "containerd"), strings.Contains(dep, "google.golang.org/grpc"),
			dep == "ceval.dev/ceval/supervisor", dep == "ceval.dev/ceval/audit", dep == "ceval.dev/ceval/launcher":
			t.Errorf("report depends on %s", dep)
		}
	}
}
