package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/snapshot"
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
// model gateway budget, as result.json records them): FinalStatus decides, as for Run.
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
		snap, err := snapshot.Load(filepath.Join(dir, record.WorkspaceDir), filepath.Join(dir, record.SnapshotFile))
		if err != nil {
			return out, fmt.Errorf("regrade %s: %w", dir, err)
		}
		if snap.Outputs, err = loadOutputs(t.Sandbox.Outputs, dir); err != nil {
			return out, fmt.Errorf("regrade %s: %w", dir, err)
		}
		o := opts
		if o.Reference == nil {
			o.Reference = t.Reference
		}
		if len(t.ProtectedMocks) > 0 {
			o.MockCallsPath = filepath.Join(dir, record.MockCallsFile)
		}
		res.ToolCalls = readToolCalls(t, dir, &o)
		j, closeJudge, err := runJudge(t, dir, opts.Judge, true)
		if err != nil {
			return out, fmt.Errorf("regrade %s: %w", dir, err)
		}
		o.Judge = j
		o.AgentJudge = &recordedAgentJudges{dir: dir}
		g := grader.Grade(ctx, t, snap, o)
		closeJudge()
		saveCriterionOutputs(dir, g, regradeRedactor(t))
		res.Grade = *g
		// What happened to the agent is as the run recorded it (limits_hit included).
		res.Status, _ = record.FinalStatus(res.Status, res.Agent, res.Gateway, t.Sandbox.Limits.Timeout)
		regradeLastIteration(res) // the run directory's snapshot is the last iteration's
		if res.TaskSHA256, err = task.Digest(t); err != nil {
			return out, fmt.Errorf("regrade %s: %w", dir, err)
		}
		if err := writeResult(dir, res, regradeRedactor(t), nil); err != nil {
			return out, fmt.Errorf("regrade %s: %w", dir, err)
		}
		rg.Result = res
		out = append(out, rg)
	}
	return out, nil
}

// regradeRedactor hides the values the task's agent may have been given, as the host has
// them now: grading details quote the workspace, which the agent wrote.
func regradeRedactor(t *task.Task) func(string) string {
	if t.Agent == nil {
		return Redactor(nil)
	}
	names := append([]string{defaultCredential[t.Agent.Type]}, t.Agent.EnvPassthrough...)
	_, secrets, _ := AgentEnv(t, Allow{Env: names}, os.LookupEnv)
	return Redactor(secrets)
}
