package report

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// taskRuns is one task's synthetic outcome: scores of its runs (1 = pass).
type taskRuns struct {
	id     string
	scores []float64
	digest string
}

// synthetic builds a summary as Summarize would from runs whose score is 1 exactly when
// they pass.
func synthetic(id string, variants map[string][]taskRuns, order ...string) *Summary {
	s := &Summary{ExperimentID: "x", RunID: id, Complete: true}
	for _, v := range order {
		vs := Stats{VariantID: v}
		var all []float64
		for _, t := range variants[v] {
			ts := statsOf(t.scores)
			ts.TaskID, ts.TaskSHA256 = t.id, t.digest
			if ts.TaskSHA256 == "" {
				ts.TaskSHA256 = "sha-" + t.id
			}
			vs.Tasks = append(vs.Tasks, ts)
			all = append(all, t.scores...)
		}
		a := statsOf(all)
		vs.Runs, vs.Passed, vs.PassRate, vs.MeanScore, vs.ScoreSD = a.Runs, a.Passed, a.PassRate, a.MeanScore, a.ScoreSD
		s.Variants = append(s.Variants, vs)
	}
	return s
}

func statsOf(scores []float64) Stats {
	st := Stats{Runs: len(scores)}
	sum := 0.0
	for _, x := range scores {
		sum += x
		if x == 1 {
			st.Passed++
		}
	}
	if st.Runs > 0 {
		st.PassRate = float64(st.Passed) / float64(st.Runs)
		st.MeanScore = sum / float64(st.Runs)
		st.ScoreSD = sampleSD(scores, st.MeanScore)
	}
	return st
}

// outcomes is passed passes then failed failures.
func outcomes(passed, failed int) []float64 {
	out := make([]float64, 0, passed+failed)
	for range passed {
		out = append(out, 1)
	}
	for range failed {
		out = append(out, 0)
	}
	return out
}

func oneTask(id string, passed, failed int) *Summary {
	return synthetic(id, map[string][]taskRuns{"v": {{id: "t", scores: outcomes(passed, failed)}}}, "v")
}

func TestCompareVerdictsOnKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		base, cur *Summary
		want      Verdict
	}{
		{"an obvious regression (10/10 -> 0/10)", oneTask("b", 10, 0), oneTask("c", 0, 10), Regressed},
		{"a broken agent over 3 repeats (3/3 -> 0/3)", oneTask("b", 3, 0), oneTask("c", 0, 3), Regressed},
		{"noise (6/10 -> 5/10) is no evidence", oneTask("b", 6, 4), oneTask("c", 5, 5), NoEvidence},
		{"two runs each cannot show anything (2/2 -> 0/2)", oneTask("b", 2, 0), oneTask("c", 0, 2), NoEvidence},
		{"identical runs are no evidence", oneTask("b", 4, 4), oneTask("c", 4, 4), NoEvidence},
		{"an improvement (1/10 -> 10/10)", oneTask("b", 1, 9), oneTask("c", 10, 0), Improved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compare(tc.base, tc.cur, CompareOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Variants) != 1 || c.Variants[0].Verdict != tc.want {
				t.Fatalf("got %+v, want %s", c.Variants, tc.want)
			}
			if got := len(c.Regressions()) > 0; got != (tc.want == Regressed) {
				t.Errorf("Regressions() = %v", c.Regressions())
			}
		})
	}
}

// A regression in partial credit alone (no run passes on either side) is found by the
// mean score's Welch interval.
func TestCompareFindsAScoreOnlyRegression(t *testing.T) {
	base := synthetic("b", map[string][]taskRuns{"v": {{id: "t", scores: []float64{0.8, 0.9, 0.85, 0.8, 0.9, 0.85}}}}, "v")
	cur := synthetic("c", map[string][]taskRuns{"v": {{id: "t", scores: []float64{0.1, 0.2, 0.15, 0.1, 0.2, 0.15}}}}, "v")
	c, err := Compare(base, cur, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := c.Variants[0]
	if d.Verdict != Regressed || !d.ScoreTested || d.PassRateCI[0] > 0 || d.PassRateCI[1] < 0 {
		t.Fatalf("%+v", d)
	}
}

// Newcombe (1998), "Interval estimation for the difference between independent
// proportions", example (a): 56/70 - 48/80 = 0.2, method 10 gives 0.0524 to 0.3339.
func TestNewcombeIntervalMatchesThePublishedExample(t *testing.T) {
	d, lo, hi := newcombe(56, 70, 48, 80, normalQuantile(0.975))
	for _, c := range []struct{ got, want float64 }{{d, 0.2}, {lo, 0.0524}, {hi, 0.3339}} {
		if math.Abs(c.got-c.want) > 5e-4 {
			t.Errorf("got %.4f, want %.4f", c.got, c.want)
		}
	}
}

func TestStudentQuantileMatchesTables(t *testing.T) {
	for _, c := range []struct{ p, df, want float64 }{
		{0.975, 1, 12.7062}, {0.975, 10, 2.2281}, {0.995, 5, 4.0321}, {0.975, 1000, 1.9623}, {0.975, 2, 4.3027}, {0.975, 3, 3.1824},
	} {
		if got := studentQuantile(c.p, c.df); math.Abs(got-c.want) > 2e-3*c.want {
			t.Errorf("t(%v, df %v) = %.4f, want %.4f", c.p, c.df, got, c.want)
		}
	}
}

// Under no change at all, over many tasks, the family-wise error stays at or under the
// stated 5%: 400 simulated comparisons of 20 tasks x 5 repeats each, fixed seed.
func TestCompareHoldsTheFamilyWiseErrorUnderNoChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(id string, rates []float64) *Summary {
		var ts []taskRuns
		for i, p := range rates {
			var scores []float64
			for range 5 {
				if rng.Float64() < p {
					scores = append(scores, 1)
				} else {
					scores = append(scores, 0)
				}
			}
			ts = append(ts, taskRuns{id: string(rune('a' + i)), scores: scores})
		}
		return synthetic(id, map[string][]taskRuns{"v": ts}, "v")
	}
	const sims = 400
	wrong := 0
	for range sims {
		rates := make([]float64, 20)
		for i := range rates {
			rates[i] = rng.Float64()
		}
		c, err := Compare(draw("b", rates), draw("c", rates), CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Regressions())+len(c.Improvements()) > 0 {
			wrong++
		}
	}
	t.Logf("%d of %d comparisons of unchanged agents gave a verdict", wrong, sims)
	if float64(wrong)/sims > 0.05 {
		t.Errorf("%d of %d comparisons of unchanged agents gave a verdict (over 5%%)", wrong, sims)
	}
}

func TestCompareNamesTheRegressedTaskAmongMany(t *testing.T) {
	ok := func(id string) taskRuns { return taskRuns{id: id, scores: outcomes(5, 0)} }
	base := synthetic("b", map[string][]taskRuns{
		"good": {ok("a"), ok("b"), ok("c")}, "bad": {ok("a"), ok("b"), ok("c")},
	}, "good", "bad")
	cur := synthetic("c", map[string][]taskRuns{
		"good": {ok("a"), ok("b"), ok("c")},
		"bad":  {ok("a"), {id: "b", scores: outcomes(0, 5)}, {id: "c", scores: outcomes(0, 5)}},
	}, "good", "bad")
	c, err := Compare(base, cur, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Tests != 16 {
		t.Errorf("tests = %d, want 16 (2 variant rows + 6 task rows, pass rate and score each)", c.Tests)
	}
	var names []string
	for _, d := range c.Regressions() {
		names = append(names, d.VariantID+"/"+d.TaskID)
	}
	if strings.Join(names, " ") != "bad/ bad/b bad/c" {
		t.Errorf("regressions %q, want the bad variant and its tasks b and c", names)
	}
}

func TestCompareRefusesAnotherPlanListingEveryDifference(t *testing.T) {
	base := synthetic("b", map[string][]taskRuns{"v": {
		{id: "kept", scores: outcomes(3, 0)}, {id: "dropped", scores: outcomes(3, 0)}, {id: "edited", scores: outcomes(3, 0), digest: "old"},
	}}, "v")
	cur := synthetic("c", map[string][]taskRuns{"v": {
		{id: "kept", scores: outcomes(0, 3)}, {id: "added", scores: outcomes(3, 0)}, {id: "edited", scores: outcomes(3, 0), digest: "new"},
	}}, "v")
	_, err := Compare(base, cur, CompareOptions{})
	var pe *PlanChangeError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a PlanChangeError", err)
	}
	want := []PlanDiff{{"v", "added", PlanOnlyInCurrent}, {"v", "edited", PlanDigestChanged}, {"v", "dropped", PlanOnlyInBaseline}}
	if len(pe.Diffs) != len(want) {
		t.Fatalf("diffs %v, want %v", pe.Diffs, want)
	}
	for i := range want {
		if pe.Diffs[i] != want[i] {
			t.Errorf("diff %d = %v, want %v", i, pe.Diffs[i], want[i])
		}
	}
	if !strings.Contains(err.Error(), "--allow-plan-change") || !strings.Contains(err.Error(), "v/dropped: only in the baseline") {
		t.Errorf("message %q", err)
	}

	c, err := Compare(base, cur, CompareOptions{AllowPlanChange: true})
	if err != nil {
		t.Fatal(err)
	}
	v := c.Variants[0]
	if len(c.PlanChanges) != 3 || len(v.Tasks) != 2 || v.Baseline.Runs != 6 || v.Current.Runs != 6 {
		t.Fatalf("shared comparison %+v", c)
	}
	for _, td := range v.Tasks {
		if td.DigestChanged != (td.TaskID == "edited") {
			t.Errorf("task %s digest changed = %v", td.TaskID, td.DigestChanged)
		}
	}
}

func TestBelowRateNamesTheVariantsUnderTheGate(t *testing.T) {
	s := synthetic("c", map[string][]taskRuns{"hi": {{id: "t", scores: outcomes(4, 1)}}, "lo": {{id: "t", scores: outcomes(1, 4)}}}, "hi", "lo")
	got := BelowRate(s, 0.5)
	if len(got) != 1 || got[0].VariantID != "lo" {
		t.Errorf("BelowRate = %+v, want lo only", got)
	}
}

func TestCompareCountsCevalsOwnFailuresApart(t *testing.T) {
	base, cur := oneTask("b", 3, 0), oneTask("c", 1, 2)
	cur.Variants[0].Statuses = map[string]int{"SUCCESS": 1, "ERROR": 2}
	c, err := Compare(base, cur, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.NotGraded["current"] != 2 || c.NotGraded["baseline"] != 0 {
		t.Errorf("NotGraded = %v, want current 2", c.NotGraded)
	}
	if md := string(MarkdownComparison(c)); !strings.Contains(md, "The current has 2 ERROR or NOT_GRADED runs") {
		t.Errorf("Markdown does not say so:\n%s", md)
	}
}

// A summary.json written before compare existed has no digests: that is not the same plan,
// and the message says how to fix it.
func TestCompareRefusesASummaryWithoutDigestsSayingHowToFixIt(t *testing.T) {
	base, cur := oneTask("b", 3, 0), oneTask("c", 3, 0)
	base.Variants[0].Tasks[0].TaskSHA256 = ""
	_, err := Compare(base, cur, CompareOptions{})
	if err == nil || !strings.Contains(err.Error(), "v/t: task digest missing") || !strings.Contains(err.Error(), "ceval report RUN_DIR") {
		t.Errorf("err = %v", err)
	}
}

// Ten repeats each of three tasks, one of which stopped passing: 30/30 -> 20/30 pooled
// over runs looks like a regression, but it is one task of three, and repeats of that
// task are not independent evidence about the variant. The variant's row is paired by
// task and says so; the task's own row still finds it.
func TestCompareVariantRowCountsTasksNotRepeats(t *testing.T) {
	ok := func(id string) taskRuns { return taskRuns{id: id, scores: outcomes(10, 0)} }
	base := synthetic("b", map[string][]taskRuns{"v": {ok("a"), ok("b"), ok("c")}}, "v")
	cur := synthetic("c", map[string][]taskRuns{"v": {ok("a"), ok("b"), {id: "c", scores: outcomes(0, 10)}}}, "v")
	c, err := Compare(base, cur, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := c.Variants[0]
	if v.PassRateMethod != MethodPairedNewcombe || !(v.PassRateCI[0] < 0 && v.PassRateCI[1] > 0) {
		t.Errorf("variant row %s %v: one task of three cannot show the variant regressed", v.PassRateMethod, v.PassRateCI)
	}
	for _, td := range v.Tasks {
		if regressed := td.PassRateCI[1] < 0; regressed != (td.TaskID == "c") || td.PassRateMethod != MethodNewcombe {
			t.Errorf("task %s: %s %v", td.TaskID, td.PassRateMethod, td.PassRateCI)
		}
	}
}
