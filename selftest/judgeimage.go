package selftest

import (
	"context"

	"github.com/containerd/errdefs"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/task"
)

// judgeAgent says of an attack with an agent_judge criterion whether its judge agent must
// start for the attack to try anything; each such attack sets exactly one of the two
// (TestEveryJudgeAttackSaysWhetherItsJudgeStarts).
type judgeAgent struct {
	// starts is why the attack proves nothing unless its judge agent runs. The judge runs in
	// the agent image (the real CLIs): without it the judge never starts and the criterion
	// ends ERROR, which the suite must count as a breach for every other attack (an agent
	// that makes its run ERROR has it excluded), so the row is skipped, saying this and how
	// to build the image.
	starts string
	// neverStarts is why ceval refuses the judged copy before the judge starts: the attack
	// runs without the agent image, and a judge that starts anyway ends ERROR there, a
	// breach, as it would be one with the image.
	neverStarts string
}

// judgeAgents holds what each attack with an agent_judge criterion needs of its judge agent,
// keyed by attack name (its task_id).
var judgeAgents = map[string]judgeAgent{
	"agent-judge-config":         {starts: "the judge's CLI must start over the configuration the agent planted and load none of it"},
	"agent-judge-run-forgery":    {starts: "the judge must run the agent's run-tests.sh, which tries to rewrite its verdict"},
	"agent-judge-codex-forgery":  {starts: "the Codex judge must source the agent's script in the shell Codex started, which tries to rewrite its verdict"},
	"agent-judge-snapshot-flood": {starts: "the judge must run the agent's run-tests.sh, which floods its /judge past the snapshot's entry cap"},
	"agent-judge-over-context": {neverStarts: "the agent leaves the workspace so that the judge's copy cannot hold it whole " +
		"(a file over the snapshot's per-file cap, a directory below its depth cap, a name not in UTF-8): " +
		"the criterion FAILs before a judge agent starts (supervisor's judgedCopyIncomplete)"},
}

// judgeImageNeed is why the attack's task needs the agent image for its judge agent, "" when
// it has no agent_judge criterion or its judge must never start.
func judgeImageNeed(t *task.Task) string {
	for _, c := range t.Criteria {
		if c.Type != task.AgentJudge {
			continue
		}
		j := judgeAgents[t.ID]
		switch {
		case j.neverStarts != "":
			return ""
		case j.starts != "":
			return j.starts
		}
		return "its agent_judge's judge agent runs in it"
	}
	return ""
}

// judgeImageMissing says why an attack cannot try what it attacks when its judge agent needs
// the agent image and containerd lacks it (see judgeAgent.starts), with how to build it;
// "" when it can run.
func judgeImageMissing(ctx context.Context, o Options, t *task.Task) string {
	if o.Kube != nil || o.Client == nil {
		return ""
	}
	why := judgeImageNeed(t)
	if why == "" {
		return ""
	}
	if _, err := o.Client.ImageService().Get(ctx, images.AgentName); errdefs.IsNotFound(err) {
		return "needs the agent image " + images.AgentName + " (" + why + "), which is not in containerd: build it with ceval images build-agent"
	}
	return ""
}
