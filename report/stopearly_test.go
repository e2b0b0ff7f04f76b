package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/record"
)

// A stop_early decision (stopped_early.json) reaches summary.json, the Markdown summary and
// report.html; its reason is escaped in the HTML like any run data.
func TestStoppedEarlyIsInTheSummaryAndReports(t *testing.T) {
	dir := t.TempDir()
	plan := &record.Plan{ExperimentID: "e", Repeats: 2, Variants: []string{"a", "b"},
		Entries: []record.PlanEntry{{Variant: "a", TaskID: "t"}, {Variant: "b", TaskID: "t"}}}
	if err := record.WriteJSONAtomic(filepath.Join(dir, record.PlanFile), plan); err != nil {
		t.Fatal(err)
	}
	stop := &record.EarlyStop{Compare: [2]string{"a", "b"}, Confidence: 0.9, AfterRuns: 2, Planned: 4, Better: "b", Reason: "b wins <script>"}
	if err := record.WriteJSONAtomic(filepath.Join(dir, record.StopFile), stop); err != nil {
		t.Fatal(err)
	}
	e, s, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.StoppedEarly == nil || s.StoppedEarly.Reason != "b wins <script>" || s.Complete {
		t.Fatalf("summary %+v", s)
	}
	if md := string(Markdown(e, s)); !strings.Contains(md, "Stopped early after 2 of 4 runs: ` b ` passes more often") {
		t.Errorf("markdown:\n%s", md)
	}
	html, _ := os.ReadFile(filepath.Join(dir, HTMLFile))
	if !strings.Contains(string(html), "stopped early after 2 of 4 runs: b wins &lt;script&gt;") {
		t.Errorf("report.html lacks the stop")
	}
}
