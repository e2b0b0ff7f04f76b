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

// AgentJudgeSpec is an agent_judge: a judge agent's verdict, from its own sandbox.
type AgentJudgeSpec struct {
	Rubric           string // the judge agent's instructions (inline, or read from rubric_file)
	JudgeAgent       string // claude-code | codex
	JudgeModel       string
	AgentFixturePath string              // absolute: the judge agent's gateway replay fixture; "" forwards
	AgentFixture     *transcript.Fixture // parsed at load from AgentFixturePath
	AgentFixtureData []byte              // its bytes as read at load (digested for regrade reuse)
	Timeout          time.Duration
	JudgeMaxTurns    int
}

func newAgentJudgeSpec() *AgentJudgeSpec {
	return &AgentJudgeSpec{JudgeAgent: AgentClaudeCode, Timeout: DefaultAgentJudgeTimeout, JudgeMaxTurns: DefaultAgentJudgeTurns}
}

func (s *AgentJudgeSpec) fields() []criterionField {
	return append(rubricFields(&s.Rubric), []criterionField{
		{"judge_agent", func(cd *criterionDecoding, v *yaml.Node) {
			cd.l.enum(v, cd.what+".judge_agent", []string{AgentClaudeCode, AgentCodex}, &s.JudgeAgent)
		}},
		{"judge_model", func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".judge_model", &s.JudgeModel) }},
		{"agent_fixture", func(cd *criterionDecoding, v *yaml.Node) {
			p, data := cd.l.readFile(v, cd.what+".agent_fixture")
			if p == "" {
				return
			}
			fx, err := transcript.ParseFixture(bytes.NewReader(data))
			if err != nil {
				cd.l.errorf(resolve(v), "%s.agent_fixture: %v", cd.what, err)
				return
			}
			s.AgentFixturePath, s.AgentFixture, s.AgentFixtureData = p, fx, data
		}},
		timeoutField(&s.Timeout),
		{"max_turns", func(cd *criterionDecoding, v *yaml.Node) {
			n := int64(DefaultAgentJudgeTurns)
			cd.l.integer(v, cd.what+".max_turns", 1, 1000, &n)
			s.JudgeMaxTurns = int(n)
		}},
	}...)
}

// check validates an agent_judge once its fields are read.
func (c *AgentJudgeSpec) check(cd *criterionDecoding) {
	n := cd.n
	switch {
	case cd.keys["rubric"] != nil && cd.keys["rubric_file"] != nil:
		cd.errorf(n, "give rubric or rubric_file, not both")
	case c.Rubric == "" && cd.keys["rubric_file"] == nil:
		cd.errorf(n, "missing required field rubric (or rubric_file): the judge agent's instructions")
	}
	if cd.keys["pass_threshold"] == nil {
		cd.c.PassThreshold = 0.7
	}
}
