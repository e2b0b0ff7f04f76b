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

func init() {
	criterionFields[AgentJudge] = []string{"rubric", "rubric_file", "judge_agent", "judge_model", "agent_fixture", "timeout", "max_turns"}
	CriterionTypes = append(CriterionTypes, AgentJudge)
}

// agentJudgeFields are the decoders of agent_judge's own fields.
func (l *loader) agentJudgeFields(what string, c *Criterion) map[string]func(*yaml.Node) {
	return map[string]func(*yaml.Node){
		"judge_agent": func(v *yaml.Node) {
			l.enum(v, what+".judge_agent", []string{AgentClaudeCode, AgentCodex}, &c.JudgeAgent)
		},
		"judge_model": func(v *yaml.Node) { l.str(v, what+".judge_model", &c.JudgeModel) },
		"agent_fixture": func(v *yaml.Node) {
			p, data := l.readFile(v, what+".agent_fixture")
			if p == "" {
				return
			}
			fx, err := transcript.ParseFixture(bytes.NewReader(data))
			if err != nil {
				l.errorf(resolve(v), "%s.agent_fixture: %v", what, err)
				return
			}
			c.AgentFixturePath, c.AgentFixture, c.AgentFixtureData = p, fx, data
		},
		"max_turns": func(v *yaml.Node) {
			n := int64(DefaultAgentJudgeTurns)
			l.integer(v, what+".max_turns", 1, 1000, &n)
			c.JudgeMaxTurns = int(n)
		},
	}
}

// checkAgentJudge fills agent_judge's defaults once its fields are read.
func (l *loader) checkAgentJudge(n *yaml.Node, what string, c *Criterion, seen map[string]*yaml.Node) {
	if c.Type != AgentJudge {
		return
	}
	switch {
	case seen["rubric"] != nil && seen["rubric_file"] != nil:
		l.errorf(n, "%s: give rubric or rubric_file, not both", what)
	case c.Rubric == "" && seen["rubric_file"] == nil:
		l.errorf(n, "%s: missing required field rubric (or rubric_file): the judge agent's instructions", what)
	}
	if c.JudgeAgent == "" {
		c.JudgeAgent = AgentClaudeCode
	}
	if seen["timeout"] == nil {
		c.Timeout = DefaultAgentJudgeTimeout
	}
	if c.JudgeMaxTurns == 0 {
		c.JudgeMaxTurns = DefaultAgentJudgeTurns
	}
	if seen["pass_threshold"] == nil {
		c.PassThreshold = 0.7
	}
}
