package report

import (
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"ceval.dev/ceval/record"
)

func TestPassAtKIsTheUnbiasedEstimator(t *testing.T) {
	cases := []struct {
		n, c, k int
		want    float64
	}{
		{3, 0, 1, 0},
		{3, 3, 3, 1},
		{3, 1, 1, 1.0 / 3},
		{3, 1, 2, 2.0 / 3}, // 1 - C(2,2)/C(3,2)
		{3, 1, 3, 1},
		{10, 2, 5, 1 - 56.0/252}, // 1 - C(8,5)/C(10,5)
		{5, 0, 5, 0},
	}
	for _, c := range cases {
		if got := PassAtK(c.n, c.c, c.k); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("PassAtK(%d,%d,%d) = %v, want %v", c.n, c.c, c.k, got, c.want)
		}
	}
	if !math.IsNaN(PassAtK(2, 1, 3)) {
		t.Error("k > n must be undefined")
	}
}

// Issue 37: 4 passes of 4 showed [1.00, 1.00] and 0 of 4 [0.00, 0.00] (a percentile
// bootstrap collapses there). A task's interval is Wilson's; a variant's over tasks is
// clustered by task, so 3 repeats of 2 tasks all passed are 2 tasks' evidence; the paired
// difference of two variants is in the summary.
func TestSummaryIntervalsAreHonestAtAllAndNoPasses(t *testing.T) {
	all := []string{"SUCCESS", "SUCCESS", "SUCCESS", "SUCCESS"}
	none := []string{"FAILURE", "FAILURE", "FAILURE", "FAILURE"}
	dir := writeExperiment(t, map[string]map[string][]string{
		"strong": {"a": all, "b": all},
		"weak":   {"a": none, "b": none},
	}, []string{"strong", "weak"}, []string{"a", "b"}, 4)
	_, s, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	strong, weak := s.Variants[0], s.Variants[1]
	for _, c := range []struct {
		what   string
		st     Stats
		lo, hi float64
		method string
	}{
		{"strong/a, 4 of 4", strong.Tasks[0], 0.510109, 1, MethodWilson},
		{"weak/b, 0 of 4", weak.Tasks[1], 0, 0.489891, MethodWilson},
		// 2 tasks' evidence at t(0.975, 1 df) = 12.706: 2 / (2 + 12.706²) = 0.012236.
		{"strong over 2 tasks", strong, 0.012236, 1, MethodClusteredWilson},
		{"weak over 2 tasks", weak, 0, 1 - 0.012236, MethodClusteredWilson},
	} {
		if math.Abs(c.st.PassRateCI95[0]-c.lo) > 1e-5 || math.Abs(c.st.PassRateCI95[1]-c.hi) > 1e-5 || c.st.PassRateCIMethod != c.method {
			t.Errorf("%s: %v %q, want [%.6f, %.6f] %q", c.what, c.st.PassRateCI95, c.st.PassRateCIMethod, c.lo, c.hi, c.method)
		}
	}
	if strong.EffectiveRuns != 2 || strong.Tasks[0].EffectiveRuns != 4 {
		t.Errorf("effective runs %v (variant), %v (task), want 2 and 4", strong.EffectiveRuns, strong.Tasks[0].EffectiveRuns)
	}
	if len(s.Differences) != 1 {
		t.Fatalf("differences %+v", s.Differences)
	}
	d := s.Differences[0]
	if d.VariantID != "strong" || d.Versus != "weak" || d.Tasks != 2 || d.PassRateDiff != 1 || d.Method != MethodPairedNewcombe ||
		!(d.PassRateDiffCI95[0] > -1 && d.PassRateDiffCI95[0] < 0.5) || d.PassRateDiffCI95[1] != 1 {
		t.Errorf("difference %+v: two tasks cannot make 1 certain", d)
	}
	data, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"pass_rate_ci95_method": "task-clustered wilson"`, `"variant_differences"`, `"effective_runs"`} {
		if !strings.Contains(string(data), field) {
			t.Errorf("summary.json has no %s", field)
		}
	}
}

// writeExperiment writes plan.json and result.json files: outcome[variant][task] lists the
// status of each repeat ("" = not run).
func writeExperiment(t testing.TB, statuses map[string]map[string][]string, variants, tasks []string, repeats int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run1")
	plan := &record.Plan{ExperimentID: "e", Repeats: repeats, Variants: variants}
	for _, v := range variants {
		for _, id := range tasks {
			plan.Entries = append(plan.Entries, record.PlanEntry{Variant: v, TaskID: id})
		}
	}
	os.MkdirAll(dir, 0o700)
	if err := record.WriteJSONAtomic(filepath.Join(dir, record.PlanFile), plan); err != nil {
		t.Fatal(err)
	}
	for _, pr := range plan.Runs() {
		en := plan.Entries[pr.Entry]
		st := statuses[en.Variant][en.TaskID][pr.Repeat-1]
		if st == "" {
			continue
		}
		rd := plan.Dir(dir, pr)
		os.MkdirAll(rd, 0o700)
		code := 0
		res := &record.Result{Grade: record.Grade{TaskID: en.TaskID, Status: st}, Variant: en.Variant, Repeat: pr.Repeat,
			Complete: st != "ERROR", Agent: record.AgentResult{ExitCode: &code, Tokens: map[string]int{"input": 10}}}
		if st == "SUCCESS" {
			res.Score = 1
		} else {
			res.Score = 0.5
			res.Criteria = []record.CriterionResult{{Status: record.CriterionFail, Details: "agent wrote <script>alert(1)</script>\x1b[31m\x00"}}
		}
		res.Timings.Agent = 2
		if err := record.WriteJSONAtomic(filepath.Join(rd, record.ResultFile), res); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestSummaryCountsErrorsInEveryDenominator(t *testing.T) {
	dir := writeExperiment(t, map[string]map[string][]string{
		"good": {"a": {"SUCCESS", "SUCCESS", "SUCCESS"}, "b": {"SUCCESS", "FAILURE", "ERROR"}},
		"bad":  {"a": {"FAILURE", "FAILURE", "TIMEOUT"}, "b": {"SUCCESS", "", ""}},
	}, []string{"good", "bad"}, []string{"a", "b"}, 3)
	_, s, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	good, bad := s.Variants[0], s.Variants[1]
	if good.Runs != 6 || good.Passed != 4 || math.Abs(good.PassRate-4.0/6) > 1e-12 || good.Statuses["ERROR"] != 1 {
		t.Errorf("good: %+v", good)
	}
	// pass@1 = mean over tasks (1 and 1/3); pass@3 = mean(1, 1).
	if math.Abs(good.PassAtK["1"]-(1+1.0/3)/2) > 1e-12 || good.PassAtK["3"] != 1 {
		t.Errorf("good pass@k %v", good.PassAtK)
	}
	if bad.Runs != 4 || bad.Passed != 1 || bad.Statuses[StatusNotRun] != 2 || bad.Statuses["TIMEOUT"] != 1 {
		t.Errorf("bad: %+v", bad)
	}
	// Task b of bad has one run: pass@2 and pass@3 are defined only for task a (0).
	if bad.PassAtK["1"] != 0.5 || bad.PassAtK["3"] != 0 {
		t.Errorf("bad pass@k %v", bad.PassAtK)
	}
	if s.Complete || good.Tokens["input"] != 60 || good.MeanAgentSeconds != 2 || math.Abs(good.MeanScore-5.0/6) > 1e-12 {
		t.Errorf("complete %v tokens %v agent %v score %v", s.Complete, good.Tokens, good.MeanAgentSeconds, good.MeanScore)
	}
	if len(s.Tasks) != 2 || s.Tasks[0].TaskID != "a" || s.Tasks[0].Runs != 6 || s.Tasks[0].Passed != 3 {
		t.Errorf("tasks %+v", s.Tasks)
	}
	data, err := os.ReadFile(filepath.Join(dir, JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	var j junitSuites
	if err := xml.Unmarshal(data, &j); err != nil {
		t.Fatalf("junit.xml does not parse (control characters?): %v", err)
	}
	if j.Tests != 12 || j.Failures != 4 || j.Errors != 1 || j.Suites[1].Skipped != 2 {
		t.Errorf("junit tests %d failures %d errors %d skipped %d", j.Tests, j.Failures, j.Errors, j.Suites[1].Skipped)
	}
	if !strings.Contains(string(data), "&lt;script&gt;") || strings.Contains(string(data), "<script>") {
		t.Error("agent text not escaped in junit.xml")
	}
}

// A run ended by a model gateway budget is the agent's failure, as FAILURE and TIMEOUT are:
// never passed in any rate, and a JUnit failure naming the limit, not an error (ERROR is
// ceval's side).
func TestBudgetStatusesAreTheAgentsFailures(t *testing.T) {
	budget := func(status, kind, limit string) *record.Result {
		code := 0
		return &record.Result{Grade: record.Grade{Status: status, Score: 1}, Complete: true,
			Agent:     record.AgentResult{ExitCode: &code, StoppedBy: "model gateway budget: " + limit},
			Gateway:   &record.GatewayResult{GatewayTotals: record.GatewayTotals{Exceeded: kind, ExceededLimit: limit}},
			LimitsHit: []string{"model gateway budget: " + limit}}
	}
	results := []*record.Result{
		budget(record.StatusMaxTurns, record.ExceededTurns, "max_turns 2"),
		budget(record.StatusTokenBudget, record.ExceededTokens, "max_total_tokens 40"),
		budget(record.StatusCostBudget, record.ExceededCost, "max_usd 0.05"),
		{Grade: record.Grade{Status: record.StatusTimeout}, Complete: true, Agent: record.AgentResult{TimedOut: true}, LimitsHit: []string{"timeout 1m0s"}},
		{Grade: record.Grade{Status: record.StatusError}, Error: "containerd went away"},
	}
	plan := &record.Plan{ExperimentID: "e", Repeats: len(results), Variants: []string{"v"},
		Entries: []record.PlanEntry{{Variant: "v", TaskID: "a"}}}
	e := &Experiment{Dir: t.TempDir(), Plan: plan}
	for _, pr := range plan.Runs() {
		e.Runs = append(e.Runs, Run{PlannedRun: pr, Variant: "v", TaskID: "a", Result: results[pr.Repeat-1]})
	}
	s := Summarize(e).Variants[0]
	if s.Runs != 5 || s.Passed != 0 || s.PassRate != 0 || s.PassAtK["1"] != 0 || s.PassAtK["5"] != 0 || s.Statuses[record.StatusMaxTurns] != 1 {
		t.Errorf("budget runs counted as passed: %+v", s)
	}
	data, err := JUnit(e)
	if err != nil {
		t.Fatal(err)
	}
	var j junitSuites
	if err := xml.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	if j.Failures != 4 || j.Errors != 1 {
		t.Errorf("junit failures %d errors %d, want 4 failures (3 budgets, the timeout) and 1 error:\n%s", j.Failures, j.Errors, data)
	}
	want := []string{"model gateway budget: max_turns 2", "model gateway budget: max_total_tokens 40", "model gateway budget: max_usd 0.05", "timeout 1m0s"}
	for i, w := range want {
		c := j.Suites[0].Cases[i]
		if c.Failure == nil || c.Failure.Type != results[i].Status || !strings.Contains(c.Failure.Message, w) {
			t.Errorf("case %d: failure %+v, want type %s and %q in the message", i, c.Failure, results[i].Status, w)
		}
	}
}

// TestSummaryHasPassRatesPerDataset: rows' tasks (DATASET.ROW) are summed per dataset, over
// every variant and per variant; plain tasks make no dataset.
func TestSummaryHasPassRatesPerDataset(t *testing.T) {
	dir := writeExperiment(t, map[string]map[string][]string{
		"v": {"cls.a": {"SUCCESS"}, "cls.b": {"FAILURE"}, "cls.c": {"SUCCESS"}, "plain": {"SUCCESS"}},
		"w": {"cls.a": {"FAILURE"}, "cls.b": {"FAILURE"}, "cls.c": {"SUCCESS"}, "plain": {"FAILURE"}},
	}, []string{"v", "w"}, []string{"cls.a", "cls.b", "cls.c", "plain"}, 1)
	_, s, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Datasets) != 1 {
		t.Fatalf("datasets %+v", s.Datasets)
	}
	d := s.Datasets[0]
	if d.TaskID != "cls" || d.Runs != 6 || d.Passed != 3 || len(d.Tasks) != 2 || d.Tasks[0].VariantID != "v" || d.Tasks[0].Passed != 2 || d.Tasks[1].Passed != 1 {
		t.Fatalf("dataset %+v", d)
	}
}

// TestSummaryHasPrecisionRecallF1PerDataset: a dataset's classification_match results give
// one-vs-rest precision, recall and F1 per expected label (worked by hand below); a label
// only the agent wrote adds no row; a dataset without the criterion has no table.
func TestSummaryHasPrecisionRecallF1PerDataset(t *testing.T) {
	rows := []struct{ id, expected, predicted string }{
		{"sent.r1", "pos", "pos"},
		{"sent.r2", "pos", "neg"},
		{"sent.r3", "neg", "neg"},
		{"sent.r4", "neg", "banana"},
		{"sent.r5", "neu", "pos"},
	}
	plan := &record.Plan{ExperimentID: "e", Repeats: 1, Variants: []string{"v"}}
	e := &Experiment{Dir: t.TempDir(), Plan: plan}
	for i, r := range rows {
		plan.Entries = append(plan.Entries, record.PlanEntry{Variant: "v", TaskID: r.id})
		status := record.StatusFailure
		if r.expected == r.predicted {
			status = record.StatusSuccess
		}
		res := &record.Result{Complete: true, Grade: record.Grade{Status: status, Criteria: []record.CriterionResult{
			{Type: "classification_match", Label: &record.Label{Expected: r.expected, Predicted: r.predicted}},
			{Type: "file_exists"},
		}}}
		e.Runs = append(e.Runs, Run{PlannedRun: record.PlannedRun{Entry: i, Repeat: 1}, Variant: "v", TaskID: r.id, Result: res})
	}
	plan.Entries = append(plan.Entries, record.PlanEntry{Variant: "v", TaskID: "other.r1"})
	e.Runs = append(e.Runs, Run{PlannedRun: record.PlannedRun{Entry: len(rows), Repeat: 1}, Variant: "v", TaskID: "other.r1",
		Result: &record.Result{Complete: true, Grade: record.Grade{Status: record.StatusSuccess}}})
	s := Summarize(e)
	if len(s.Datasets) != 2 || s.Datasets[1].Classification != nil {
		t.Fatalf("datasets %+v", s.Datasets)
	}
	c := s.Datasets[0].Classification
	third := 1.0 / 3
	want := &Classification{Predictions: 5, Accuracy: 0.4, MacroPrecision: third, MacroRecall: third, MacroF1: third, Labels: []LabelStats{
		{Label: "neg", Support: 2, Precision: 0.5, Recall: 0.5, F1: 0.5}, // r3 right, r4 missed, r2 wrongly neg
		{Label: "neu", Support: 1},                                       // r5 missed, never predicted
		{Label: "pos", Support: 2, Precision: 0.5, Recall: 0.5, F1: 0.5}, // r1 right, r2 missed, r5 wrongly pos
	}}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if c == nil || c.Predictions != want.Predictions || !near(c.Accuracy, want.Accuracy) || !near(c.MacroPrecision, third) ||
		!near(c.MacroRecall, third) || !near(c.MacroF1, third) || !reflect.DeepEqual(c.Labels, want.Labels) {
		t.Fatalf("classification %+v, want %+v", c, want)
	}
	if v := s.Datasets[0].Tasks[0]; v.VariantID != "v" || !reflect.DeepEqual(v.Classification, c) {
		t.Errorf("per variant %+v", v.Classification)
	}
}

// TestMarkdownShowsEachDatasetsF1: the markdown report has a row per dataset and variant.
func TestMarkdownShowsEachDatasetsF1(t *testing.T) {
	s := &Summary{ExperimentID: "e", RunID: "r", Datasets: []Stats{{TaskID: "sent", Tasks: []Stats{
		{VariantID: "v", Runs: 5, PassRate: 0.4, Classification: &Classification{Accuracy: 0.4, MacroPrecision: 1.0 / 3, MacroRecall: 0.5, MacroF1: 0.25}},
		{VariantID: "w", Runs: 5, PassRate: 1},
	}}}}
	md := string(Markdown(nil, s))
	for _, row := range []string{"| ` sent ` | ` v ` | 5 | 40% | 40% | 0.33 | 0.50 | 0.25 |", "| ` sent ` | ` w ` | 5 | 100% | - | - | - | - |"} {
		if !strings.Contains(md, row) {
			t.Errorf("no row %q in:\n%s", row, md)
		}
	}
}
