package supervisor

import (
	"context"
	"os"
	"path/filepath"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// RegradeRun grades the saved workspace snapshot of the finished run in dir again, with t's
// criteria as they are now, without running any agent, and rewrites its result.json; res
// is the run's result.json as read. The run keeps the status its agent earned (a timeout or
// a model gateway budget, as result.json records them): FinalStatus decides, as for Run.
func RegradeRun(ctx context.Context, t *task.Task, dir string, res *record.Result, opts grader.Options) error {
	if t.MultiStep() {
		return regradeSteps(ctx, t, dir, res, opts) // each step on its own snapshot (multistep.go)
	}
	snap, err := snapshot.Load(filepath.Join(dir, record.WorkspaceDir), filepath.Join(dir, record.SnapshotFile))
	if err != nil {
		return err
	}
	if snap.Outputs, err = loadOutputs(t.Sandbox.Outputs, dir); err != nil {
		return err
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
		return err
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
		return err
	}
	return writeResult(dir, res, regradeRedactor(t), nil)
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
