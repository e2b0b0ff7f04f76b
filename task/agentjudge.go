package task

import (
	"bytes"
	"time"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/gateway/transcript"
)

// Defaults of agent_judge.
const (
	DefaultAgentJudgeTimeout = 5 * time.Minute
	DefaultAgentJudgeTurns   = 30
)

// agentJudgeFieldDecoders read agent_judge's own fields (rubric and rubric_file are
// llm_judge's, timeout the executing criteria's).
var agentJudgeFieldDecoders = map[string]criterionFieldDecoder{
	"judge_agent": func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.enum(v, cd.what+".judge_agent", []string{AgentClaudeCode, AgentCodex}, &cd.c.JudgeAgent)
	},
	"judge_model": func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".judge_model", &cd.c.JudgeModel) },
	"agent_fixture": func(cd *criterionDecoding, v *yaml.Node) {
		p, data := cd.l.readFile(v, cd.what+".agent_fixture")
		if p == "" {
			return
		}
		fx, err := transcript.ParseFixture(bytes.NewReader(data))
		if err != nil {
			cd.l.errorf(resolve(v), "%s.agent_fixture: %v", cd.what, err)
			return
		}
		cd.c.AgentFixturePath, cd.c.AgentFixture, cd.c.AgentFixtureData = p, fx, data
	},
	"max_turns": func(cd *criterionDecoding, v *yaml.Node) {
		n := int64(DefaultAgentJudgeTurns)
		cd.l.integer(v, cd.what+".max_turns", 1, 1000, &n)
		cd.c.JudgeMaxTurns = int(n)
	},
}

// checkAgentJudge validates an agent_judge and fills its defaults once its fields are read.
func checkAgentJudge(cd *criterionDecoding) {
	c, n := cd.c, cd.n
	switch {
	case cd.keys["rubric"] != nil && cd.keys["rubric_file"] != nil:
		cd.errorf(n, "give rubric or rubric_file, not both")
	case c.Rubric == "" && cd.keys["rubric_file"] == nil:
		cd.errorf(n, "missing required field rubric (or rubric_file): the judge agent's instructions")
	}
	if c.JudgeAgent == "" {
		c.JudgeAgent = AgentClaudeCode
	}
	if cd.keys["timeout"] == nil {
		c.Timeout = DefaultAgentJudgeTimeout
	}
	if c.JudgeMaxTurns == 0 {
		c.JudgeMaxTurns = DefaultAgentJudgeTurns
	}
	if cd.keys["pass_threshold"] == nil {
		c.PassThreshold = 0.7
	}
}
