package experiment

import (
	"context"
	"fmt"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/supervisor"
	"ceval.dev/ceval/task"
)

// Regraded is what Regrade did to one run.
type Regraded struct {
	Dir       string
	OldStatus string
	Result    *record.Result // nil when skipped
	Skipped   string         // why the run was not regraded ("" when it was)
}

// Regrade grades the saved workspace snapshots of an experiment's runs again, with the
// criteria the experiment's tasks have now, without running any agent, and rewrites each
// result.json. Runs without a snapshot (not run, interrupted, failed on ceval's side) are
// skipped and say why. e must expand to the same runs as the recorded plan (the criteria
// may differ: that is the point). A run keeps the status its agent earned (a timeout or a
// model gateway budget, as result.json records them): FinalStatus decides, as for supervisor.Run.
func Regrade(ctx context.Context, e *task.Experiment, expDir string, opts grader.Options) ([]Regraded, error) {
	plan, err := record.ReadPlan(expDir)
	if err != nil {
		return nil, err
	}
	tasks := map[[2]string]*task.Task{}
	for _, en := range e.Entries {
		tasks[[2]string{en.Variant, en.Task.ID}] = en.Task
	}
	var out []Regraded
	for _, pr := range plan.Runs() {
		en := plan.Entries[pr.Entry]
		dir := plan.Dir(expDir, pr)
		rg := Regraded{Dir: dir}
		t := tasks[[2]string{en.Variant, en.TaskID}]
		res, err := record.ReadResult(dir)
		switch {
		case t == nil:
			rg.Skipped = "the experiment no longer has this task under this variant"
		case err != nil:
			rg.Skipped = "no result.json"
		case !res.Complete:
			rg.Skipped = "the run did not complete; nothing was snapshotted"
		}
		if rg.Skipped != "" {
			out = append(out, rg)
			continue
		}
		rg.OldStatus = res.Status
		if err := supervisor.RegradeRun(ctx, t, dir, res, opts); err != nil {
			return out, fmt.Errorf("regrade %s: %w", dir, err)
		}
		rg.Result = res
		out = append(out, rg)
	}
	return out, nil
}
