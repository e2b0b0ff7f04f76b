package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJudgeCriteriaSchema(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "rubric.md"), []byte("Score it.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "answers.yaml"), []byte("answers: [{score: 1, reasons: ok}, 'not json']\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "empty.yaml"), []byte("answers: []\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "model.yaml"), []byte("version: 1\napi: anthropic\nturns: [{text: done}]\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "ref"), 0o755)
	const base = "task_id: t\ninitial_prompt: p\nagent: {type: claude-code}\n"
	cases := []struct {
		name, doc string
		check     func(c Criterion) bool
		want      string
	}{
		{"llm_judge defaults", "success_criteria: [{type: llm_judge, rubric: r, files: ['*.md']}]",
			func(c Criterion) bool {
				s := c.Spec.(*LLMJudgeSpec)
				return s.Samples == 1 && s.MaxFileBytes == DefaultJudgeFileBytes && c.PassThreshold == 0.7 && s.JudgeAnswers == nil
			}, ""},
		{"rubric file and fixture", "success_criteria: [{type: llm_judge, rubric_file: rubric.md, judge_fixture: answers.yaml, samples: 3, pass_threshold: 0.5}]",
			func(c Criterion) bool {
				s := c.Spec.(*LLMJudgeSpec)
				return s.Rubric == "Score it.\n" && s.Samples == 3 && c.PassThreshold == 0.5 &&
					len(s.JudgeAnswers) == 2 && s.JudgeAnswers[0] == `{"reasons":"ok","score":1}` && s.JudgeAnswers[1] == "not json"
			}, ""},
		{"no rubric", "success_criteria: [{type: llm_judge, files: [a]}]", nil, "missing required field rubric"},
		{"both rubrics", "success_criteria: [{type: llm_judge, rubric: r, rubric_file: rubric.md}]", nil, "not both"},
		{"empty fixture", "success_criteria: [{type: llm_judge, rubric: r, judge_fixture: empty.yaml}]", nil, "has no answers"},
		{"file leaves the workspace", "success_criteria: [{type: llm_judge, rubric: r, files: [../x]}]", nil, "files[0]"},
		{"samples bound", "success_criteria: [{type: llm_judge, rubric: r, samples: 50}]", nil, "samples"},
		{"reference_files without a reference", "success_criteria: [{type: llm_judge, rubric: r, reference_files: [a]}]", nil, "needs reference.directory"},
		{"reference_files escaping", "reference: {directory: ref}\nsuccess_criteria: [{type: llm_judge, rubric: r, reference_files: [../x]}]", nil, "clean path relative"},
		{"agent_judge defaults", "success_criteria: [{type: agent_judge, rubric: r, agent_fixture: model.yaml}]",
			func(c Criterion) bool {
				s := c.Spec.(*AgentJudgeSpec)
				return s.JudgeAgent == AgentClaudeCode && s.Timeout == DefaultAgentJudgeTimeout && s.JudgeMaxTurns == DefaultAgentJudgeTurns &&
					s.AgentFixturePath == filepath.Join(dir, "model.yaml") && s.AgentFixture != nil && c.PassThreshold == 0.7
			}, ""},
		{"agent_judge bad agent", "success_criteria: [{type: agent_judge, rubric: r, judge_agent: command}]", nil, "judge_agent"},
		{"agent_judge bad fixture", "success_criteria: [{type: agent_judge, rubric: r, agent_fixture: rubric.md}]", nil, "agent_fixture"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk, err := Parse("task.yaml", dir, []byte(base+c.doc+"\n"))
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got %v, want %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(tk.Criteria[0]) {
				t.Fatalf("criterion %+v", tk.Criteria[0])
			}
		})
	}
}
