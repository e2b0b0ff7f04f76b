package task

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Bounds of llm_judge.
const (
	DefaultJudgeFileBytes = 32 << 10
	MaxJudgeFileBytes     = 256 << 10
	MaxJudgeFiles         = 64
	MaxJudgeSamples       = 9
	MaxJudgeAnswers       = 1000
)

func init() {
	criterionFields[LLMJudge] = []string{"rubric", "rubric_file", "files", "max_file_bytes", "reference_files", "samples", "judge_fixture"}
	CriterionTypes = append(CriterionTypes, LLMJudge)
}

// judgeFields are the decoders of llm_judge's fields.
func (l *loader) judgeFields(what string, c *Criterion) map[string]func(*yaml.Node) {
	return map[string]func(*yaml.Node){
		"rubric": func(v *yaml.Node) { l.str(v, what+".rubric", &c.Rubric) },
		"rubric_file": func(v *yaml.Node) {
			if p, data := l.readFile(v, what+".rubric_file"); p != "" {
				c.Rubric = string(data)
			}
		},
		"files": func(v *yaml.Node) {
			l.list(v, what+".files", func(i int, item *yaml.Node) {
				if p := l.criterionPath(item, fmt.Sprintf("%s.files[%d]", what, i), true); p != "" {
					c.Files = append(c.Files, p)
				}
			})
		},
		"max_file_bytes": func(v *yaml.Node) {
			n := int64(DefaultJudgeFileBytes)
			l.integer(v, what+".max_file_bytes", 1, MaxJudgeFileBytes, &n)
			c.MaxFileBytes = int(n)
		},
		"reference_files": func(v *yaml.Node) {
			l.strings(v, what+".reference_files", &c.ReferenceFiles)
			for _, p := range c.ReferenceFiles {
				if path.IsAbs(p) || p != path.Clean(p) || p == ".." || strings.HasPrefix(p, "../") {
					l.errorf(resolve(v), "%s.reference_files: %q must be a clean path relative to reference.directory", what, p)
				}
			}
		},
		"samples": func(v *yaml.Node) {
			n := int64(1)
			l.integer(v, what+".samples", 1, MaxJudgeSamples, &n)
			c.Samples = int(n)
		},
		"judge_fixture": func(v *yaml.Node) { c.JudgeAnswers = l.judgeFixture(v, what+".judge_fixture") },
	}
}

// judgeFixture reads a replay fixture of judge answers: {answers: [...]}, each a raw answer
// text or a {score, reasons} mapping (written as the JSON a judge would answer).
func (l *loader) judgeFixture(v *yaml.Node, what string) []string {
	p, data := l.readFile(v, what)
	if p == "" {
		return nil
	}
	doc, err := readDoc(p, data, "judge fixture")
	if err != nil {
		l.errorf(resolve(v), "%s: %v", what, err)
		return nil
	}
	sub := &decoder{file: p}
	answers := []string{}
	sub.mapping(doc.Content[0], "judge fixture", []field{{"answers", func(n *yaml.Node) {
		sub.list(n, "answers", func(i int, item *yaml.Node) {
			if len(answers) >= MaxJudgeAnswers {
				sub.errorf(item, "answers: more than %d", MaxJudgeAnswers)
				return
			}
			ri := resolve(item)
			if ri.Kind == yaml.ScalarNode {
				answers = append(answers, ri.Value)
				return
			}
			val, ok := sub.value(ri)
			if !ok {
				return
			}
			b, err := json.Marshal(val)
			if err != nil {
				sub.errorf(item, "answers[%d]: %v", i, err)
				return
			}
			answers = append(answers, string(b))
		})
	}}})
	for _, pr := range sub.problems {
		l.problems = append(l.problems, pr)
	}
	if len(answers) == 0 && len(sub.problems) == 0 {
		l.errorf(resolve(v), "%s: %s has no answers (answers: [{score: 1, reasons: ...}, ...])", what, p)
	}
	return answers
}

// checkJudgeCriterion validates an llm_judge once its fields are read.
func (l *loader) checkJudgeCriterion(n *yaml.Node, what string, c *Criterion, seen map[string]*yaml.Node) {
	if c.Type != LLMJudge {
		return
	}
	switch {
	case seen["rubric"] != nil && seen["rubric_file"] != nil:
		l.errorf(n, "%s: give rubric or rubric_file, not both", what)
	case strings.TrimSpace(c.Rubric) == "" && seen["rubric_file"] == nil:
		l.errorf(n, "%s: missing required field rubric (or rubric_file): what the judge grades, and how it maps to a score from 0 to 1", what)
	}
	if len(c.Files) > MaxJudgeFiles {
		l.errorf(n, "%s: files lists %d entries; at most %d", what, len(c.Files), MaxJudgeFiles)
	}
	if c.MaxFileBytes == 0 {
		c.MaxFileBytes = DefaultJudgeFileBytes
	}
	if c.Samples == 0 {
		c.Samples = 1
	}
	if seen["pass_threshold"] == nil {
		c.PassThreshold = 0.7 // a judge's scores are graded, rarely 1 for good work
	}
}
