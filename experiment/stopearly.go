package experiment

import (
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"time"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/internal/seqtest"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// stopTest names the sequential test in stopped_early.json.
const stopTest = "mixture SPRT on discordant pairs (sequential McNemar sign test, uniform prior); valid when checked after every run"

// stopper applies an experiment's stop_early: after each finished run it feeds the
// compared variants' (task, repeat) pairs, in plan order and only while every pair before
// is finished, to the sequential test; once the test decides it records why and closes
// stopped, and no new run is launched.
type stopper struct {
	cfg     *task.StopEarly
	expDir  string
	planned int
	pairs   [][2]int // indexes into the plan's runs: [first variant's run, second's]

	mu       sync.Mutex
	finished map[int]bool // run index -> passed
	done     int
	stopped  chan struct{}
	record   *record.EarlyStop
}

func newStopper(cfg *task.StopEarly, plan *record.Plan, runs []record.PlannedRun, expDir string) *stopper {
	s := &stopper{cfg: cfg, expDir: expDir, planned: len(runs), finished: map[int]bool{}, stopped: make(chan struct{})}
	index := map[record.PlannedRun]int{}
	for i, r := range runs {
		index[r] = i
	}
	second := map[string]int{} // task_id -> the second variant's entry
	for i, en := range plan.Entries {
		if en.Variant == cfg.Compare[1] {
			second[en.TaskID] = i
		}
	}
	for r := 1; r <= plan.Repeats; r++ {
		for i, en := range plan.Entries {
			if en.Variant != cfg.Compare[0] {
				continue
			}
			if j, ok := second[en.TaskID]; ok {
				s.pairs = append(s.pairs, [2]int{index[record.PlannedRun{Entry: i, Repeat: r}], index[record.PlannedRun{Entry: j, Repeat: r}]})
			}
		}
	}
	return s
}

// isStopped reports whether the test has decided.
func (s *stopper) isStopped() bool {
	select {
	case <-s.stopped:
		return true
	default:
		return false
	}
}

// observe records run i's outcome and runs the test; it returns an error only when the
// decision could not be written.
func (s *stopper) observe(i int, rec *RunRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.record != nil || rec == nil {
		return nil
	}
	s.finished[i] = rec.Result != nil && rec.Result.Status == grader.TaskSuccess
	s.done++
	var pairs []seqtest.Pair
	for _, p := range s.pairs {
		a, okA := s.finished[p[0]]
		b, okB := s.finished[p[1]]
		if !okA || !okB {
			break // pairs are read in plan order, never in finishing order
		}
		pairs = append(pairs, seqtest.Pair{A: a, B: b})
	}
	d := seqtest.SignTest(pairs, s.cfg.Confidence, s.cfg.MinRuns)
	if !d.Decided {
		return nil
	}
	better, worse := s.cfg.Compare[0], s.cfg.Compare[1]
	if d.Better == "b" {
		better, worse = worse, better
	}
	s.record = &record.EarlyStop{
		Time: time.Now().UTC().Format(time.RFC3339), Compare: s.cfg.Compare, Metric: s.cfg.Metric,
		Confidence: s.cfg.Confidence, MinRuns: s.cfg.MinRuns, Test: stopTest,
		AfterRuns: s.done, Planned: s.planned, Pairs: d.Pairs, Discordant: d.Discordant, FirstOnly: d.AOnly,
		LogE: d.LogE, LogBound: d.LogBound, Better: better,
		Reason: fmt.Sprintf("%s passes more often than %s at confidence %g: of %d paired runs, %d passed under one variant only, %d of them under %s (e-value %.3g >= %.3g); no new run was launched after %d of %d runs",
			better, worse, s.cfg.Confidence, d.Pairs, d.Discordant, max(d.AOnly, d.Discordant-d.AOnly), better, math.Exp(d.LogE), math.Exp(d.LogBound), s.done, s.planned),
	}
	close(s.stopped)
	return record.WriteJSONAtomic(filepath.Join(s.expDir, record.StopFile), s.record)
}
