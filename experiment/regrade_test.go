package experiment

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"ceval.dev/ceval/gateway"
	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/snapshot"
)

// savedRun writes an experiment of one task whose run has a saved workspace (holding x, so
// the task's criterion passes) and the given result.json, as a finished run leaves them.
func savedRun(t *testing.T, res *record.Result) (expDir string, e func() []Regraded) {
	t.Helper()
	ex := loadTestExperiment(t, "experiment_id: r\ntasks: [a/task.yaml]\n", map[string]string{
		"a": agentTask("a", "true", "  - {type: file_exists, path: x}\n"),
	})
	plan, err := NewPlan(ex)
	if err != nil {
		t.Fatal(err)
	}
	expDir = t.TempDir()
	if err := record.WriteJSONAtomic(filepath.Join(expDir, record.PlanFile), plan); err != nil {
		t.Fatal(err)
	}
	dir := plan.Dir(expDir, plan.Runs()[0])
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "x"), []byte("done\n"), 0o644)
	os.MkdirAll(dir, 0o700)
	snap, err := snapshot.Take(ws, filepath.Join(dir, record.WorkspaceDir), snapshot.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.WriteManifest(filepath.Join(dir, record.SnapshotFile)); err != nil {
		t.Fatal(err)
	}
	res.TaskID, res.Complete = "a", true
	if err := record.WriteJSONAtomic(filepath.Join(dir, record.ResultFile), res); err != nil {
		t.Fatal(err)
	}
	return expDir, func() []Regraded {
		t.Helper()
		out, err := Regrade(context.Background(), ex, expDir, grader.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 1 || out[0].Result == nil {
			t.Fatalf("regrade: %+v", out)
		}
		return out
	}
}

// Regrading a run keeps what happened to its agent: a run whose agent exceeded a model
// gateway budget, or timed out, keeps that status however the snapshot grades now; only
// a run whose agent finished on its own takes the grade's status.
func TestRegradeKeepsTheStatusTheAgentEarned(t *testing.T) {
	budget := func(kind, limit string) *record.GatewayResult {
		return &record.GatewayResult{Mode: "replay", Log: record.ModelCallsFile, GatewayTotals: gateway.Totals{Turns: 2, Exceeded: kind, ExceededLimit: limit}}
	}
	cases := []struct {
		name     string
		timedOut bool
		gw       *record.GatewayResult
		want     string
	}{
		{"max_turns", false, budget(gateway.ExceededTurns, "max_turns 2"), record.StatusMaxTurns},
		{"tokens", false, budget(gateway.ExceededTokens, "max_total_tokens 40"), record.StatusTokenBudget},
		{"cost", false, budget(gateway.ExceededCost, "max_usd 0.05"), record.StatusCostBudget},
		{"timeout", true, nil, record.StatusTimeout},
		{"budget and timeout", true, budget(gateway.ExceededTurns, "max_turns 2"), record.StatusMaxTurns}, // as supervisor.Run decides
		{"gateway within budget", false, &record.GatewayResult{Mode: "replay", GatewayTotals: gateway.Totals{Turns: 1}}, grader.TaskSuccess},
		{"agent finished", false, nil, grader.TaskSuccess},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code := 0
			res := &record.Result{Agent: record.AgentResult{Type: "command", ExitCode: &code, TimedOut: c.timedOut}, Gateway: c.gw,
				LimitsHit: []string{"recorded by the run"}}
			res.Status = c.want // what supervisor.Run recorded
			if c.gw != nil && c.gw.Exceeded != "" {
				res.Agent.StoppedBy = "model gateway budget: " + c.gw.ExceededLimit
			}
			_, regrade := savedRun(t, res)
			got := regrade()[0].Result
			if got.Status != c.want || got.Score != 1 {
				t.Errorf("after regrade: status %s score %v; want %s with the snapshot's score 1", got.Status, got.Score, c.want)
			}
			if len(got.LimitsHit) != 1 {
				t.Errorf("limits_hit %q: regrade must keep the run's record as it is", got.LimitsHit)
			}
			again, err := record.ReadResult(regrade()[0].Dir)
			if err != nil {
				t.Fatalf("result.json after a second regrade: %v", err)
			}
			if again.Status != c.want {
				t.Errorf("result.json after a second regrade: status %s; want %s", again.Status, c.want)
			}
		})
	}
}

// The one function supervisor.Run and Regrade decide the status with: the agent's fate overrides the
// grade, a budget over a timeout, and nothing overrides a broken task (ERROR).
func TestFinalStatus(t *testing.T) {
	over := &record.GatewayResult{GatewayTotals: gateway.Totals{Exceeded: gateway.ExceededCost, ExceededLimit: "max_usd 1"}}
	cases := []struct {
		graded   string
		timedOut bool
		gw       *record.GatewayResult
		want     string
		hits     []string
	}{
		{grader.TaskSuccess, false, nil, grader.TaskSuccess, nil},
		{grader.TaskFailure, false, &record.GatewayResult{}, grader.TaskFailure, nil},
		{grader.TaskSuccess, true, nil, record.StatusTimeout, []string{"timeout 1m0s"}},
		{grader.TaskFailure, false, over, record.StatusCostBudget, []string{"model gateway budget: max_usd 1"}},
		{grader.TaskSuccess, true, over, record.StatusCostBudget, []string{"timeout 1m0s", "model gateway budget: max_usd 1"}},
		{grader.TaskNotGraded, true, nil, record.StatusTimeout, []string{"timeout 1m0s"}},
		{grader.TaskError, true, over, grader.TaskError, nil},
	}
	for _, c := range cases {
		st, hits := record.FinalStatus(c.graded, record.AgentResult{TimedOut: c.timedOut}, c.gw, time.Minute)
		if st != c.want || len(hits) != len(c.hits) || len(hits) > 0 && hits[len(hits)-1] != c.hits[len(c.hits)-1] {
			t.Errorf("FinalStatus(%s, timed out %v, %+v) = %s %q; want %s %q", c.graded, c.timedOut, c.gw, st, hits, c.want, c.hits)
		}
	}
}
