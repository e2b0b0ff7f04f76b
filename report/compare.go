package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"ceval.dev/ceval/record"
)

// DefaultConfidence is the family-wise confidence Compare states its verdicts at.
const DefaultConfidence = 0.95

// Verdict is what the evidence says about one comparison.
type Verdict string

// The verdicts: the interval of the difference lies wholly above zero, wholly below it, or
// contains it.
const (
	Improved   Verdict = "improved"
	Regressed  Verdict = "regressed"
	NoEvidence Verdict = "no evidence"
)

// CompareOptions tune Compare.
type CompareOptions struct {
	// Confidence is family-wise: the chance that no verdict of the comparison is wrong
	// (default DefaultConfidence). Each interval is taken at 1 - (1-Confidence)/Tests.
	Confidence float64
	// AllowPlanChange compares the variant/task pairs both summaries hold instead of
	// refusing summaries of different plans.
	AllowPlanChange bool
	// FailUnder lists in Comparison.BelowRate the current run's variants whose pass rate
	// (over all their runs) is under it.
	FailUnder float64
}

// PlanDiff is one way two summaries' plans differ.
type PlanDiff struct {
	VariantID string `json:"variant_id"`
	TaskID    string `json:"task_id"`
	Change    string `json:"change"` // PlanOnlyInBaseline, PlanOnlyInCurrent, PlanDigestChanged or PlanDigestMissing
}

// The kinds of PlanDiff.
const (
	PlanOnlyInBaseline = "only in the baseline"
	PlanOnlyInCurrent  = "only in the current run"
	PlanDigestChanged  = "task digest changed"
	PlanDigestMissing  = "task digest missing (a summary.json older than compare: re-render it with ceval report RUN_DIR)"
)

// PlanChangeError refuses a comparison of two different plans, listing every difference.
type PlanChangeError struct{ Diffs []PlanDiff }

func (e *PlanChangeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the baseline is of a different plan (%d differences); compare what both share with --allow-plan-change:", len(e.Diffs))
	for _, d := range e.Diffs {
		fmt.Fprintf(&b, "\n  %s/%s: %s", StripControls(oneLine(d.VariantID)), StripControls(oneLine(d.TaskID)), d.Change)
	}
	return b.String()
}

// Sample is one side of a comparison.
type Sample struct {
	Runs      int     `json:"runs"`
	Passed    int     `json:"passed"`
	PassRate  float64 `json:"pass_rate"`
	MeanScore float64 `json:"mean_score"`
	ScoreSD   float64 `json:"score_sd"`
}

// Delta compares one variant (over the tasks both sides share) or one task under a variant.
type Delta struct {
	VariantID string  `json:"variant_id"`
	TaskID    string  `json:"task_id,omitempty"` // empty for a variant's row
	Baseline  Sample  `json:"baseline"`
	Current   Sample  `json:"current"`
	Verdict   Verdict `json:"verdict"`
	// PassRateDiff is current - baseline, with PassRateDiff's interval: Newcombe's for a
	// task, paired by task and clustered for a variant over several (PassRateMethod).
	PassRateDiff   float64    `json:"pass_rate_diff"`
	PassRateCI     [2]float64 `json:"pass_rate_ci"`
	PassRateMethod string     `json:"pass_rate_method,omitempty"`
	// MeanScoreDiff is current - baseline, with a Welch interval when ScoreTested (each
	// side has two runs or more and the scores vary).
	MeanScoreDiff float64    `json:"mean_score_diff"`
	MeanScoreCI   [2]float64 `json:"mean_score_ci,omitempty"`
	ScoreTested   bool       `json:"score_tested"`
	DigestChanged bool       `json:"digest_changed,omitempty"`
	Tasks         []Delta    `json:"tasks,omitempty"` // a variant's tasks, when it has more than one
}

// Comparison is a current run against a baseline.
type Comparison struct {
	BaselineID  string     `json:"baseline_run_id"`
	CurrentID   string     `json:"current_run_id"`
	Confidence  float64    `json:"confidence"`   // family-wise
	Tests       int        `json:"tests"`        // intervals that can set a verdict
	PerTest     float64    `json:"per_test"`     // each interval's confidence: 1 - (1-Confidence)/Tests
	PlanChanges []PlanDiff `json:"plan_changes"` // empty unless AllowPlanChange
	Variants    []Delta    `json:"variants"`     // in the current plan's order
	Incomplete  []string   `json:"incomplete"`   // which side has planned runs without a result
	// NotGraded counts, per side ("baseline", "current"), the ERROR and NOT_GRADED runs:
	// ceval's failures, which count as not passed like every run with a result.
	NotGraded map[string]int `json:"not_graded,omitempty"`
	FailUnder float64        `json:"fail_under,omitempty"`
	BelowRate []Stats        `json:"below_rate,omitempty"` // the current run's variants under FailUnder
}

// Regressions lists the rows whose verdict is Regressed, variants before their tasks.
func (c *Comparison) Regressions() []Delta { return c.rows(Regressed) }

// Improvements lists the rows whose verdict is Improved.
func (c *Comparison) Improvements() []Delta { return c.rows(Improved) }

func (c *Comparison) rows(v Verdict) []Delta {
	var out []Delta
	for _, d := range c.Variants {
		if d.Verdict == v {
			out = append(out, d)
		}
		for _, t := range d.Tasks {
			if t.Verdict == v {
				out = append(out, t)
			}
		}
	}
	return out
}

// Compare compares cur against base per variant and per task under each variant. Pass
// rates are compared by PassRateDiff (a task: Newcombe's hybrid score interval; a variant
// over several tasks: paired by task, repeats of a task not counted as independent), mean
// scores by a Welch interval; a row is Regressed when either interval lies below zero,
// Improved when one lies above and none below. Every interval is Bonferroni-adjusted over
// all of them, so Confidence holds for the whole comparison (no more than 1-Confidence
// chance of any false verdict). Summaries of different plans (other variant/task pairs,
// other task digests) are refused with a *PlanChangeError unless opts.AllowPlanChange.
func Compare(base, cur *Summary, opts CompareOptions) (*Comparison, error) {
	conf := opts.Confidence
	if conf == 0 {
		conf = DefaultConfidence
	}
	if !(conf > 0 && conf < 1) {
		return nil, fmt.Errorf("confidence %v: want a number between 0 and 1, e.g. 0.95", conf)
	}
	diffs := planDiffs(base, cur)
	if len(diffs) > 0 && !opts.AllowPlanChange {
		return nil, &PlanChangeError{Diffs: diffs}
	}
	c := &Comparison{BaselineID: base.RunID, CurrentID: cur.RunID, Confidence: conf, PlanChanges: diffs, FailUnder: opts.FailUnder}
	if opts.FailUnder > 0 {
		c.BelowRate = BelowRate(cur, opts.FailUnder)
	}
	if !base.Complete {
		c.Incomplete = append(c.Incomplete, "baseline")
	}
	if !cur.Complete {
		c.Incomplete = append(c.Incomplete, "current")
	}
	for side, s := range map[string]*Summary{"baseline": base, "current": cur} {
		n := 0
		for _, v := range s.Variants {
			n += v.Statuses[record.StatusError] + v.Statuses[record.StatusNotGraded]
		}
		if n > 0 {
			if c.NotGraded == nil {
				c.NotGraded = map[string]int{}
			}
			c.NotGraded[side] = n
		}
	}
	baseTasks := map[[2]string]Stats{}
	for _, v := range base.Variants {
		for _, t := range v.Tasks {
			baseTasks[[2]string{v.VariantID, t.TaskID}] = t
		}
	}
	type pair struct{ base, cur []Stats }
	var variants []string
	shared := map[string]*pair{}
	for _, v := range cur.Variants {
		for _, t := range v.Tasks {
			b, ok := baseTasks[[2]string{v.VariantID, t.TaskID}]
			if !ok {
				continue
			}
			if shared[v.VariantID] == nil {
				shared[v.VariantID] = &pair{}
				variants = append(variants, v.VariantID)
			}
			shared[v.VariantID].base = append(shared[v.VariantID].base, b)
			shared[v.VariantID].cur = append(shared[v.VariantID].cur, t)
		}
	}
	for _, v := range variants {
		c.Tests += 2
		if n := len(shared[v].cur); n > 1 {
			c.Tests += 2 * n
		}
	}
	c.PerTest = 1 - (1-conf)/float64(max(c.Tests, 1))
	for _, v := range variants {
		p := shared[v]
		d := delta(pool(p.base), pool(p.cur), PassRateDiff(cells(p.cur), cells(p.base), c.PerTest), c.PerTest)
		d.VariantID = v
		if len(p.cur) > 1 {
			for i := range p.cur {
				td := delta(sample(p.base[i]), sample(p.cur[i]), PassRateDiff(cells(p.cur[i:i+1]), cells(p.base[i:i+1]), c.PerTest), c.PerTest)
				td.VariantID, td.TaskID = v, p.cur[i].TaskID
				td.DigestChanged = digestChanged(p.base[i], p.cur[i])
				d.Tasks = append(d.Tasks, td)
			}
			sort.SliceStable(d.Tasks, func(i, j int) bool { return verdictRank(d.Tasks[i].Verdict) < verdictRank(d.Tasks[j].Verdict) })
		} else {
			d.TaskID = p.cur[0].TaskID
			d.DigestChanged = digestChanged(p.base[0], p.cur[0])
		}
		c.Variants = append(c.Variants, d)
	}
	return c, nil
}

// verdictRank orders rows for a reader: regressions first.
func verdictRank(v Verdict) int {
	switch v {
	case Regressed:
		return 0
	case Improved:
		return 1
	}
	return 2
}

func digestChanged(b, c Stats) bool {
	return b.TaskSHA256 != "" && c.TaskSHA256 != "" && b.TaskSHA256 != c.TaskSHA256
}

// planDiffs lists the variant/task pairs one summary has and the other lacks, and the
// pairs whose task digest differs, in the current plan's order then the baseline's.
func planDiffs(base, cur *Summary) []PlanDiff {
	index := func(s *Summary) map[[2]string]Stats {
		m := map[[2]string]Stats{}
		for _, v := range s.Variants {
			for _, t := range v.Tasks {
				m[[2]string{v.VariantID, t.TaskID}] = t
			}
		}
		return m
	}
	bm, cm := index(base), index(cur)
	var out []PlanDiff
	for _, v := range cur.Variants {
		for _, t := range v.Tasks {
			b, ok := bm[[2]string{v.VariantID, t.TaskID}]
			switch {
			case !ok:
				out = append(out, PlanDiff{v.VariantID, t.TaskID, PlanOnlyInCurrent})
			case b.TaskSHA256 == "" || t.TaskSHA256 == "":
				out = append(out, PlanDiff{v.VariantID, t.TaskID, PlanDigestMissing})
			case b.TaskSHA256 != t.TaskSHA256:
				out = append(out, PlanDiff{v.VariantID, t.TaskID, PlanDigestChanged})
			}
		}
	}
	for _, v := range base.Variants {
		for _, t := range v.Tasks {
			if _, ok := cm[[2]string{v.VariantID, t.TaskID}]; !ok {
				out = append(out, PlanDiff{v.VariantID, t.TaskID, PlanOnlyInBaseline})
			}
		}
	}
	return out
}

func sample(s Stats) Sample {
	return pool([]Stats{s})
}

// pool merges tasks' samples into one: counts add, the mean is run-weighted and the sum
// of squares adds the within-task and between-task parts.
func pool(ts []Stats) Sample {
	var p Sample
	sum := 0.0
	for _, t := range ts {
		p.Runs += t.Runs
		p.Passed += t.Passed
		sum += t.MeanScore * float64(t.Runs)
	}
	if p.Runs == 0 {
		return p
	}
	p.PassRate = float64(p.Passed) / float64(p.Runs)
	p.MeanScore = sum / float64(p.Runs)
	ss := 0.0
	for _, t := range ts {
		ss += float64(max(t.Runs-1, 0))*t.ScoreSD*t.ScoreSD + float64(t.Runs)*(t.MeanScore-p.MeanScore)*(t.MeanScore-p.MeanScore)
	}
	if p.Runs > 1 {
		p.ScoreSD = math.Sqrt(ss / float64(p.Runs-1))
	}
	return p
}

// cells are the tasks' counts, for the pass-rate estimators.
func cells(ts []Stats) []Cell {
	out := make([]Cell, len(ts))
	for i, t := range ts {
		out[i] = Cell{Passed: t.Passed, Runs: t.Runs}
	}
	return out
}

// delta compares two samples: the pass rate by rd (current - baseline), the mean score by
// Welch at confidence conf.
func delta(b, c Sample, rd RateDiff, conf float64) Delta {
	d := Delta{Baseline: b, Current: c, Verdict: NoEvidence, PassRateMethod: rd.Method}
	if b.Runs == 0 || c.Runs == 0 {
		d.PassRateCI = [2]float64{-1, 1}
		return d
	}
	d.PassRateDiff, d.PassRateCI = rd.Diff, rd.CI
	var lo, hi float64
	d.MeanScoreDiff, lo, hi, d.ScoreTested = welch(c.MeanScore, c.ScoreSD, c.Runs, b.MeanScore, b.ScoreSD, b.Runs, conf)
	if d.ScoreTested {
		d.MeanScoreCI = [2]float64{lo, hi}
	}
	switch {
	case d.PassRateCI[1] < 0 || d.ScoreTested && d.MeanScoreCI[1] < 0:
		d.Verdict = Regressed
	case d.PassRateCI[0] > 0 || d.ScoreTested && d.MeanScoreCI[0] > 0:
		d.Verdict = Improved
	}
	return d
}

// BelowRate lists the variants of s whose pass rate is under rate (the --fail-under gate).
func BelowRate(s *Summary, rate float64) []Stats {
	var out []Stats
	for _, v := range s.Variants {
		if v.Runs > 0 {
			v.PassRate = float64(v.Passed) / float64(v.Runs) // from the counts check() held sane
		}
		if v.PassRate < rate {
			out = append(out, v)
		}
	}
	return out
}

// oneLine turns line breaks into spaces, for text quoted in a one-line message.
func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// PlanSummary is a summary of a plan with no runs yet: its variants and tasks with their
// digests, so a baseline's plan can be checked (Compare's PlanChangeError) before any run.
func PlanSummary(p *record.Plan) *Summary {
	s := &Summary{ExperimentID: p.ExperimentID, Repeats: p.Repeats}
	for _, v := range p.Variants {
		vs := Stats{VariantID: v}
		for _, en := range p.Entries {
			if en.Variant == v {
				vs.Tasks = append(vs.Tasks, Stats{VariantID: v, TaskID: en.TaskID, TaskSHA256: en.TaskSHA256})
			}
		}
		s.Variants = append(s.Variants, vs)
	}
	return s
}
