package main

import (
	"strings"
	"testing"

	"ceval.dev/ceval/images"
)

// selftest --help says that the attacks whose judge needs the agent image are skipped without
// it, and the command that builds it.
func TestSelftestHelpSaysJudgeAttacksNeedTheAgentImage(t *testing.T) {
	r := ceval(t, "selftest", "--help")
	for _, want := range []string{"or its judge needs the agent image", "agent_judge attacks whose judge agent must run need the agent image,\n" + images.AgentName,
		"without it in containerd they\nare skipped", "`ceval images build-agent`", "never starts (its judged copy is refused first) runs without it"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("selftest --help (exit %d) lacks %q:\n%s", r.code, want, r.stdout)
		}
	}
}
