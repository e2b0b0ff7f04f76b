package report

import (
	"fmt"
	"math"
)

// The interval methods, as summary.json, compare and every page name them.
const (
	// MethodWilson is the Wilson score interval over one task's runs, each an independent
	// draw of that task.
	MethodWilson = "wilson"
	// MethodClusteredWilson is, over several tasks, the Wilson score interval at the Kish
	// effective sample size of a variance clustered by task (CR1), with the t quantile on
	// tasks-1 degrees of freedom (Korn and Graubard's correction): it generalises to tasks
	// like these, counting a task's repeats as one task's evidence.
	MethodClusteredWilson = "task-clustered wilson"
	// MethodNewcombe is Newcombe's hybrid score interval of a difference of proportions
	// from independent runs (one task).
	MethodNewcombe = "newcombe"
	// MethodPairedNewcombe is Newcombe's square-and-add of each side's task-clustered
	// Wilson interval with the correlation of the two sides' per-task residuals: the
	// difference paired by task.
	MethodPairedNewcombe = "task-paired newcombe"
)

// Cell is one task's runs under one variant: the unit an interval clusters on.
type Cell struct {
	Passed, Runs int
}

// Rate is a pass rate with its interval.
type Rate struct {
	Rate   float64
	CI     [2]float64
	Method string
	Tasks  int // tasks with runs
	// EffectiveRuns is how many independent runs the evidence is worth (the runs for one
	// task; between the tasks and the runs over several).
	EffectiveRuns float64
}

// quantile is the two-sided conf quantile: normal, or Student's t on df degrees of freedom
// when df > 0.
func quantile(conf, df float64) float64 {
	p := 1 - (1-conf)/2
	if df > 0 {
		return studentQuantile(p, df)
	}
	return normalQuantile(p)
}

// totals sums cells with runs, and counts them.
func totals(cells []Cell) (passed, runs, tasks int) {
	for _, c := range cells {
		if c.Runs > 0 {
			passed, runs, tasks = passed+c.Passed, runs+c.Runs, tasks+1
		}
	}
	return passed, runs, tasks
}

// clusterVariance is the CR1 (k/(k-1)) cluster-robust variance of the pooled pass rate
// sum(passed)/sum(runs) over k tasks with runs: k/(k-1) sum (passed_i - p runs_i)^2 / N^2.
// It is 0 under two tasks.
func clusterVariance(cells []Cell) float64 {
	y, n, k := totals(cells)
	if k < 2 {
		return 0
	}
	p, ss := float64(y)/float64(n), 0.0
	for _, c := range cells {
		if c.Runs > 0 {
			r := float64(c.Passed) - p*float64(c.Runs)
			ss += r * r
		}
	}
	return float64(k) / float64(k-1) * ss / (float64(n) * float64(n))
}

// effectiveRuns is the Kish effective sample size of cells: runs over the design effect,
// the clustered variance against the binomial one. The design effect is held between 1
// (independent runs) and sum(runs_i^2)/N (each task's runs all alike); at 0 or N passes,
// where no variance can be seen, it is the latter, so the tasks alone count.
func effectiveRuns(cells []Cell) float64 {
	y, n, k := totals(cells)
	if k < 2 {
		return float64(n)
	}
	nf, p := float64(n), float64(y)/float64(n)
	worst := 0.0
	for _, c := range cells {
		worst += float64(c.Runs) * float64(c.Runs)
	}
	worst /= nf
	deff := worst
	if binom := p * (1 - p) / nf; binom > 0 {
		deff = clusterVariance(cells) / binom
	}
	return nf / math.Min(math.Max(deff, 1), worst)
}

// PassRate is the pooled pass rate of cells (tasks of one group) with its interval at
// two-sided confidence conf: Wilson over one task's runs, task-clustered Wilson over
// several. It is never degenerate: 0 or all passes give an interval as wide as the
// evidence (tasks, not repeats, over several tasks) allows.
func PassRate(cells []Cell, conf float64) Rate {
	y, n, k := totals(cells)
	r := Rate{Tasks: k, Method: MethodWilson, CI: [2]float64{0, 1}}
	if n == 0 {
		return r
	}
	r.Rate = float64(y) / float64(n)
	r.EffectiveRuns = float64(n)
	df := 0.0
	if k > 1 {
		r.Method, r.EffectiveRuns, df = MethodClusteredWilson, effectiveRuns(cells), float64(k-1)
	}
	r.CI[0], r.CI[1] = wilsonAt(r.Rate, r.EffectiveRuns, quantile(conf, df))
	return r
}

// RateDiff is a difference of pass rates, a - b, with its interval.
type RateDiff struct {
	Diff   float64
	CI     [2]float64
	Method string
	Tasks  int // tasks both sides ran
}

// PassRateDiff is the difference of two groups' pass rates, a - b, over the tasks both ran
// (a[i] and b[i] are one task), at two-sided confidence conf. One task: Newcombe's hybrid
// score interval of independent runs. Several: paired by task, Newcombe's square-and-add of
// each side's task-clustered Wilson interval with the correlation of the two sides'
// per-task residuals, so tasks both find hard do not count against the difference.
func PassRateDiff(a, b []Cell, conf float64) RateDiff {
	var sa, sb []Cell
	for i := range min(len(a), len(b)) {
		if a[i].Runs > 0 && b[i].Runs > 0 {
			sa, sb = append(sa, a[i]), append(sb, b[i])
		}
	}
	d := RateDiff{Tasks: len(sa), Method: MethodNewcombe, CI: [2]float64{-1, 1}}
	switch len(sa) {
	case 0:
		return d
	case 1:
		d.Diff, d.CI[0], d.CI[1] = newcombe(sa[0].Passed, sa[0].Runs, sb[0].Passed, sb[0].Runs, quantile(conf, 0))
		return d
	}
	ra, rb := PassRate(sa, conf), PassRate(sb, conf)
	d.Method = MethodPairedNewcombe
	d.Diff, d.CI[0], d.CI[1] = squareAndAdd(ra.Rate, ra.CI[0], ra.CI[1], rb.Rate, rb.CI[0], rb.CI[1], residualCorrelation(sa, sb))
	return d
}

// residualCorrelation is the correlation over tasks of the two sides' residuals
// (passed_i - p runs_i); 0 when either side has none (all alike).
func residualCorrelation(a, b []Cell) float64 {
	res := func(cells []Cell) []float64 {
		y, n, _ := totals(cells)
		p := float64(y) / float64(n)
		out := make([]float64, len(cells))
		for i, c := range cells {
			out[i] = float64(c.Passed) - p*float64(c.Runs)
		}
		return out
	}
	ra, rb := res(a), res(b)
	var ab, aa, bb float64
	for i := range ra {
		ab, aa, bb = ab+ra[i]*rb[i], aa+ra[i]*ra[i], bb+rb[i]*rb[i]
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return math.Max(-1, math.Min(1, ab/math.Sqrt(aa*bb)))
}

// CIText is an interval as every page prints it: "[0.51, 1.00]".
func CIText(ci [2]float64) string { return fmt.Sprintf("[%.2f, %.2f]", ci[0], ci[1]) }

// DiffCIText is a difference's interval: "[-0.12, +0.40]".
func DiffCIText(ci [2]float64) string { return fmt.Sprintf("[%+.2f, %+.2f]", ci[0], ci[1]) }

// IntervalNote says in plain text what a summary's intervals are, for every page that
// shows them (the terminal, Markdown and report.html say the same).
func IntervalNote() string {
	return fmt.Sprintf("%.0f%% intervals, each on its own. One task: Wilson over its runs. A variant over several tasks: "+
		"clustered by task (a task's repeats are one task's evidence; t quantile on tasks-1 degrees of freedom), "+
		"so few tasks give a wide interval; effective runs is what the evidence is worth. "+
		"Differences are paired by task. See docs/statistics.md.", 100*Confidence)
}
