package report

import (
	"errors"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"ceval.dev/ceval/audit/verdict"
	"ceval.dev/ceval/record"
)

// Files an experiment's directory holds beside plan.json.
const (
	SummaryFile = "summary.json"
	JUnitFile   = "junit.xml"
)

// StatusNotRun counts planned runs that have no result.json yet.
const StatusNotRun = "NOT_RUN"

// Confidence is the two-sided confidence of summary.json's intervals, each on its own
// (compare adjusts for the number of its verdicts; the summary states no verdicts).
const Confidence = 0.95

// Summary is summary.json: an experiment's numbers per variant and per task.
type Summary struct {
	ExperimentID string  `json:"experiment_id"`
	RunID        string  `json:"run_id"`
	Repeats      int     `json:"repeats"`
	Planned      int     `json:"planned_runs"`
	Complete     bool    `json:"complete"` // every planned run has a complete result
	Variants     []Stats `json:"variants"` // in the plan's order, each with its tasks
	Tasks        []Stats `json:"tasks"`    // per task over every variant, in the plan's order
	// Datasets are per dataset task (its rows' tasks are DATASET.ROW; task_ids hold no '.'),
	// over every variant, each with its variants in Tasks' place; none without datasets.
	Datasets []Stats `json:"datasets,omitempty"`
	// StoppedEarly says when and why stop_early stopped launching runs (stopped_early.json);
	// with Complete, a resume has since completed the experiment.
	StoppedEarly *record.EarlyStop `json:"stopped_early,omitempty"`
	// Concurrency is how -j auto chose and changed the runs at once (concurrency.json);
	// absent at a fixed -j.
	Concurrency *record.Concurrency `json:"concurrency,omitempty"`
	// Differences are each pair of variants' pass rates, paired on the tasks both ran, in
	// the plan's order (the first variant against each later one, and so on).
	Differences []Difference `json:"variant_differences,omitempty"`
}

// Difference is one variant's pass rate less another's over the tasks both ran, with its
// 95% interval (PassRateDiff: paired by task; Newcombe's for a single task).
type Difference struct {
	VariantID        string     `json:"variant_id"`
	Versus           string     `json:"versus"`
	Tasks            int        `json:"tasks"`
	PassRateDiff     float64    `json:"pass_rate_diff"`
	PassRateDiffCI95 [2]float64 `json:"pass_rate_diff_ci95"`
	Method           string     `json:"method"`
}

// Stats are the numbers of one group of runs. Every run with a result counts in every
// denominator, ERROR ones included; planned runs without a result count only in
// Statuses[NOT_RUN].
type Stats struct {
	VariantID        string             `json:"variant_id,omitempty"`
	TaskID           string             `json:"task_id,omitempty"`
	Runs             int                `json:"runs"`
	Passed           int                `json:"passed"`
	PassRate         float64            `json:"pass_rate"`
	PassRateCI95     [2]float64         `json:"pass_rate_ci95"` // by PassRateCIMethod (PassRate)
	MeanScore        float64            `json:"mean_score"`
	PassAtK          map[string]float64 `json:"pass_at_k"` // k = 1..repeats; mean over tasks of the unbiased estimator
	MeanAgentSeconds float64            `json:"mean_agent_seconds"`
	Tokens           map[string]int     `json:"tokens,omitempty"` // totals over the runs that reported usage
	TokenRuns        int                `json:"token_runs,omitempty"`
	Statuses         map[string]int     `json:"statuses"`
	Tasks            []Stats            `json:"tasks,omitempty"` // per task, inside a variant

	// PassRateCIMethod is MethodWilson (one task's runs) or MethodClusteredWilson (several
	// tasks: clustered by task); absent in summaries older than it, whose interval was a
	// percentile bootstrap over runs.
	PassRateCIMethod string `json:"pass_rate_ci95_method,omitempty"`
	// EffectiveRuns is how many independent runs the interval's evidence is worth: the runs
	// for one task, between the tasks and the runs for several.
	EffectiveRuns float64 `json:"effective_runs,omitempty"`

	// MeanScoreByIteration is the mean score after at most 1, 2, ... iterations of the
	// agent (task iterations or a simulated user); absent when no run iterated.
	MeanScoreByIteration []float64 `json:"mean_score_by_iteration,omitempty"`
	// PassRateByStep is each step's pass rate for a multi-step task (a task inside a
	// variant, or a summary of one task's runs); absent otherwise (steps.go).
	PassRateByStep []StepRate `json:"pass_rate_by_step,omitempty"`

	// ScoreSD is the score's sample standard deviation (0 under two runs), for Compare.
	ScoreSD float64 `json:"score_sd"`
	// TaskSHA256 is plan.json's digest of a task inside a variant: Compare's plan check.
	TaskSHA256 string `json:"task_sha256,omitempty"`
	// Classification is precision/recall/F1 of a dataset's classification_match criteria
	// (in Datasets only, over every variant and per variant).
	Classification *Classification `json:"classification,omitempty"`
	// Audit is the task's ceval audit verdict (a task inside a variant), when the experiment
	// has one.
	Audit *TaskAudit `json:"audit,omitempty"`
}

// Run is one planned run with its result (nil when it has none yet).
type Run struct {
	record.PlannedRun
	Variant string
	TaskID  string
	Dir     string
	Result  *record.Result
}

// Experiment is an experiment's directory as read back: its plan and every planned run.
type Experiment struct {
	Dir  string
	Plan *record.Plan
	Runs []Run // in the plan's order
	// Audit is the directory's audit.json (ceval audit's reports), nil when it has none.
	Audit []verdict.Report
	// StoppedEarly is stopped_early.json, nil when stop_early did not stop it.
	StoppedEarly *record.EarlyStop
	// Concurrency is concurrency.json (-j auto's choices), nil at a fixed -j.
	Concurrency *record.Concurrency
}

// Load reads plan.json and each planned run's result.json, at their exact paths.
func Load(expDir string) (*Experiment, error) {
	plan, err := record.ReadPlan(expDir)
	if err != nil {
		return nil, err
	}
	e := &Experiment{Dir: expDir, Plan: plan}
	if e.Audit, err = loadAudit(expDir); err != nil {
		return nil, err
	}
	for _, pr := range plan.Runs() {
		en := plan.Entries[pr.Entry]
		r := Run{PlannedRun: pr, Variant: en.Variant, TaskID: en.TaskID, Dir: plan.Dir(expDir, pr)}
		res, err := record.ReadResult(r.Dir)
		switch {
		case err == nil:
			r.Result = res
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
		e.Runs = append(e.Runs, r)
	}
	stop, err := record.ReadEarlyStop(expDir)
	switch {
	case err == nil:
		e.StoppedEarly = stop
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	conc, err := record.ReadConcurrency(expDir)
	switch {
	case err == nil:
		e.Concurrency = conc
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	return e, nil
}

// Summarize computes the summary. It depends only on the results (never on the order they
// finished in or the clock), so an interrupted and resumed experiment summarizes as an
// uninterrupted one does.
func Summarize(e *Experiment) *Summary {
	s := &Summary{ExperimentID: e.Plan.ExperimentID, RunID: filepath.Base(e.Dir), Repeats: e.Plan.Repeats,
		Planned: len(e.Runs), Complete: true, StoppedEarly: e.StoppedEarly, Concurrency: e.Concurrency}
	for _, r := range e.Runs {
		if r.Result == nil || !r.Result.Complete {
			s.Complete = false
		}
	}
	var taskIDs []string
	seenTask := map[string]bool{}
	for _, en := range e.Plan.Entries {
		if !seenTask[en.TaskID] {
			seenTask[en.TaskID] = true
			taskIDs = append(taskIDs, en.TaskID)
		}
	}
	for _, v := range e.Plan.Variants {
		vs := stats(e.runs(v, ""), e.Plan.Repeats)
		vs.VariantID = v
		for _, id := range taskIDs {
			runs := e.runs(v, id)
			if len(runs) == 0 {
				continue
			}
			ts := stats(runs, e.Plan.Repeats)
			ts.TaskID = id
			ts.TaskSHA256 = e.Plan.Entries[runs[0].Entry].TaskSHA256
			ts.Audit = auditFor(e.Audit, v, id, ts.TaskSHA256)
			vs.Tasks = append(vs.Tasks, ts)
		}
		s.Variants = append(s.Variants, vs)
	}
	for _, id := range taskIDs {
		ts := stats(e.runs("", id), e.Plan.Repeats)
		ts.TaskID = id
		s.Tasks = append(s.Tasks, ts)
	}
	var datasets []string
	seenDS := map[string]bool{}
	for _, id := range taskIDs {
		if ds, _, ok := strings.Cut(id, "."); ok && !seenDS[ds] {
			seenDS[ds] = true
			datasets = append(datasets, ds)
		}
	}
	for _, ds := range datasets {
		in := func(r Run) bool { return strings.HasPrefix(r.TaskID, ds+".") }
		var all []Run
		for _, r := range e.Runs {
			if in(r) {
				all = append(all, r)
			}
		}
		dst := stats(all, e.Plan.Repeats)
		dst.TaskID = ds
		dst.Classification = classification(all)
		for _, v := range e.Plan.Variants {
			var vr []Run
			for _, r := range all {
				if r.Variant == v {
					vr = append(vr, r)
				}
			}
			if len(vr) == 0 {
				continue
			}
			vs := stats(vr, e.Plan.Repeats)
			vs.VariantID = v
			vs.Classification = classification(vr)
			dst.Tasks = append(dst.Tasks, vs)
		}
		s.Datasets = append(s.Datasets, dst)
	}
	s.Differences = Differences(s.Variants)
	return s
}

// Differences pairs every two variants (in their order) on the tasks both ran.
func Differences(variants []Stats) []Difference {
	var out []Difference
	for i, a := range variants {
		for _, b := range variants[i+1:] {
			byTask := map[string]Stats{}
			for _, t := range b.Tasks {
				byTask[t.TaskID] = t
			}
			var ca, cb []Cell
			for _, t := range a.Tasks {
				if bt, ok := byTask[t.TaskID]; ok {
					ca, cb = append(ca, Cell{t.Passed, t.Runs}), append(cb, Cell{bt.Passed, bt.Runs})
				}
			}
			d := PassRateDiff(ca, cb, Confidence)
			if d.Tasks == 0 {
				continue
			}
			out = append(out, Difference{VariantID: a.VariantID, Versus: b.VariantID, Tasks: d.Tasks,
				PassRateDiff: d.Diff, PassRateDiffCI95: d.CI, Method: d.Method})
		}
	}
	return out
}

// runs selects the runs of a variant and/or a task ("" = any), in plan order.
func (e *Experiment) runs(variant, taskID string) []Run {
	var out []Run
	for _, r := range e.Runs {
		if (variant == "" || r.Variant == variant) && (taskID == "" || r.TaskID == taskID) {
			out = append(out, r)
		}
	}
	return out
}

// passed is SUCCESS only: FAILURE, TIMEOUT and a model gateway budget exceeded are the
// agent's failures, ERROR and NOT_GRADED are not passes either.
func passed(r *record.Result) bool { return r != nil && r.Status == record.StatusSuccess }

// stats computes one group's numbers; its interval clusters the runs by task.
func stats(runs []Run, repeats int) Stats {
	s := Stats{Statuses: map[string]int{}, PassAtK: map[string]float64{}}
	byTask := map[string]int{}
	var tasks []Cell
	var score, agent float64
	var scores []float64
	agentRuns := 0
	type count struct{ n, c int }
	perTask := map[string]*count{}
	var taskOrder []string
	for _, r := range runs {
		if r.Result == nil {
			s.Statuses[StatusNotRun]++
			continue
		}
		res := r.Result
		s.Runs++
		s.Statuses[res.Status]++
		ok := passed(res)
		i, seen := byTask[r.TaskID]
		if !seen {
			i = len(tasks)
			byTask[r.TaskID] = i
			tasks = append(tasks, Cell{})
		}
		tasks[i].Runs++
		if ok {
			s.Passed++
			tasks[i].Passed++
		}
		score += res.Score
		scores = append(scores, res.Score)
		if res.Agent.ExitCode != nil {
			agent += res.Timings.Agent
			agentRuns++
		}
		if len(res.Agent.Tokens) > 0 {
			if s.Tokens == nil {
				s.Tokens = map[string]int{}
			}
			for k, v := range res.Agent.Tokens {
				s.Tokens[k] += v
			}
			s.TokenRuns++
		}
		key := r.Variant + "\x00" + r.TaskID
		if perTask[key] == nil {
			perTask[key] = &count{}
			taskOrder = append(taskOrder, key)
		}
		perTask[key].n++
		if ok {
			perTask[key].c++
		}
	}
	if s.Runs > 0 {
		s.PassRate = float64(s.Passed) / float64(s.Runs)
		s.MeanScore = score / float64(s.Runs)
		s.ScoreSD = sampleSD(scores, s.MeanScore)
		r := PassRate(tasks, Confidence)
		s.PassRateCI95, s.PassRateCIMethod, s.EffectiveRuns = r.CI, r.Method, r.EffectiveRuns
	}
	if agentRuns > 0 {
		s.MeanAgentSeconds = agent / float64(agentRuns)
	}
	s.MeanScoreByIteration = meanScoreByIteration(runs)
	s.PassRateByStep = passRateByStep(runs)
	for k := 1; k <= repeats; k++ {
		sum, tasks := 0.0, 0
		for _, key := range taskOrder {
			c := perTask[key]
			if c.n >= k {
				sum += PassAtK(c.n, c.c, k)
				tasks++
			}
		}
		if tasks > 0 {
			s.PassAtK[strconv.Itoa(k)] = sum / float64(tasks)
		}
	}
	return s
}

// PassAtK is the unbiased estimator of the chance that at least one of k runs passes,
// given c passes in n runs: 1 - C(n-c, k) / C(n, k), computed as a product so it neither
// overflows nor loses precision.
func PassAtK(n, c, k int) float64 {
	if k <= 0 || k > n {
		return math.NaN()
	}
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}
