package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/selftest"
	"ceval.dev/ceval/supervisor"
)

// In a containerd without the agent image, a judge attack whose judge agent must run is
// skipped, saying why it needs the image and how to build it, while agent-judge-over-context,
// whose judged copy is refused before any judge starts, runs and scores 0 (detected: the snapshot's caps it passed): its agent_judge
// FAILs naming the copy, and no judge run exists. Red without the per-attack decision: both
// skipped.
func TestSelftestWithoutTheAgentImageRunsTheJudgeAttackWhoseJudgeNeverStarts(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	_, ns := ctrtest.FreshNamespace(t, ctx, c)
	r := ceval(t, "selftest", "--json", "--namespace", ns, "--runs-dir", t.TempDir(),
		"--only", "agent-judge-over-context,agent-judge-config")
	rep := selftestReport(t, r)
	if len(rep.Attacks) != 2 || r.code != 0 {
		t.Fatalf("exit %d, %d rows, want 0 and 2:\n%s\n%s", r.code, len(rep.Attacks), r.stdout, r.stderr)
	}
	for _, a := range rep.Attacks {
		switch a.Name {
		case "agent-judge-config":
			want := "needs the agent image " + images.AgentName + " (the judge's CLI must start over the configuration the agent planted"
			if a.Outcome != string(selftest.Skipped) || !strings.Contains(a.Detail, want) || !strings.Contains(a.Detail, "build it with ceval images build-agent") {
				t.Errorf("%s: %s: %s; want skipped: %s ... build it with ceval images build-agent", a.Name, a.Outcome, a.Detail, want)
			}
		case "agent-judge-over-context":
			if a.Outcome != string(selftest.Blocked) && a.Outcome != string(selftest.Detected) || a.Score != 0 {
				t.Fatalf("%s: %s, score %.2f: %s; want blocked or detected, 0", a.Name, a.Outcome, a.Score, a.Detail)
			}
			res, err := record.ReadResult(a.RunDir)
			if err != nil {
				t.Fatal(err)
			}
			judged := false
			for _, cr := range res.Criteria {
				if cr.Type != "agent_judge" {
					continue
				}
				judged = true
				if cr.Status != "FAIL" || !strings.Contains(cr.Details, "cannot be handed whole to a judge agent") {
					t.Errorf("agent_judge: %s %q, want FAIL naming the judged copy", cr.Status, cr.Details)
				}
			}
			if !judged {
				t.Error("the result has no agent_judge criterion")
			}
			if _, err := os.Stat(filepath.Join(a.RunDir, supervisor.AgentJudgeDir)); !os.IsNotExist(err) {
				t.Errorf("a judge agent ran (%s: %v): its copy must be refused before it starts", supervisor.AgentJudgeDir, err)
			}
		default:
			t.Errorf("unexpected row %s", a.Name)
		}
	}
}
