package selftest

import (
	"path/filepath"
	"testing"

	"ceval.dev/ceval/task"
)

// Every attack with an agent_judge criterion says whether its judge agent must start, and
// only those whose judge starts need the agent image: agent-judge-over-context's judged copy
// is refused before any judge starts, so it runs (and is blocked) without the image.
func TestEveryJudgeAttackSaysWhetherItsJudgeStarts(t *testing.T) {
	all, err := Attacks()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	judged := map[string]bool{}
	for _, a := range all {
		if a.loader != nil || a.Needs != "" {
			continue // no task to run, or one built with a host tool: no agent_judge in either
		}
		dir := filepath.Join(root, a.Name)
		if err := materialize(a, dir, NewCanary()); err != nil {
			t.Fatal(err)
		}
		tk, err := task.Load(filepath.Join(dir, "task.yaml"))
		if err != nil {
			continue // refused at load by design (TestEveryAttackIsAValidTask... says which)
		}
		for _, c := range tk.Criteria {
			judged[a.Name] = judged[a.Name] || c.Type == task.AgentJudge
		}
		j, declared := judgeAgents[a.Name]
		switch {
		case judged[a.Name] && (j.starts == "") == (j.neverStarts == ""):
			t.Errorf("%s has an agent_judge: set exactly one of starts and neverStarts in judgeAgents", a.Name)
		case !judged[a.Name] && declared:
			t.Errorf("%s has no agent_judge, yet judgeAgents names it", a.Name)
		}
		need := judgeImageNeed(tk)
		switch {
		case judged[a.Name] && j.starts != "" && need != j.starts:
			t.Errorf("%s: judgeImageNeed = %q, want %q", a.Name, need, j.starts)
		case (!judged[a.Name] || j.neverStarts != "") && need != "":
			t.Errorf("%s: judgeImageNeed = %q, want none: its judge never starts", a.Name, need)
		}
		tk.Close()
	}
	for name := range judgeAgents {
		if !judged[name] {
			t.Errorf("judgeAgents names %s, which is no attack with an agent_judge", name)
		}
	}
	for name, starts := range map[string]bool{"agent-judge-config": true, "agent-judge-run-forgery": true,
		"agent-judge-snapshot-flood": true, "agent-judge-over-context": false} {
		if got := judgeImageNeed(&task.Task{ID: name, Criteria: []task.Criterion{{Type: task.AgentJudge}}}) != ""; got != starts {
			t.Errorf("%s needs the agent image: %v, want %v", name, got, starts)
		}
	}
}
