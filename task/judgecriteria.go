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

// judgeFieldDecoders read llm_judge's fields (rubric and rubric_file are agent_judge's too).
var judgeFieldDecoders = map[string]criterionFieldDecoder{
	"rubric": func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".rubric", &cd.c.Rubric) },
	"rubric_file": func(cd *criterionDecoding, v *yaml.Node) {
		if p, data := cd.l.readFile(v, cd.what+".rubric_file"); p != "" {
			cd.c.Rubric = string(data)
		}
	},
	"files": func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.list(v, cd.what+".files", func(i int, item *yaml.Node) {
			if p := cd.l.criterionPath(item, fmt.Sprintf("%s.files[%d]", cd.what, i), true); p != "" {
				cd.c.Files = append(cd.c.Files, p)
			}
		})
	},
	"max_file_bytes": func(cd *criterionDecoding, v *yaml.Node) {
		n := int64(DefaultJudgeFileBytes)
		cd.l.integer(v, cd.what+".max_file_bytes", 1, MaxJudgeFileBytes, &n)
		cd.c.MaxFileBytes = int(n)
	},
	"reference_files": func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.strings(v, cd.what+".reference_files", &cd.c.ReferenceFiles)
		for _, p := range cd.c.ReferenceFiles {
			if path.IsAbs(p) || p != path.Clean(p) || p == ".." || strings.HasPrefix(p, "../") {
				cd.l.errorf(resolve(v), "%s.reference_files: %q must be a clean path relative to reference.directory", cd.what, p)
			}
		}
	},
	"samples": func(cd *criterionDecoding, v *yaml.Node) {
		n := int64(1)
		cd.l.integer(v, cd.what+".samples", 1, MaxJudgeSamples, &n)
		cd.c.Samples = int(n)
	},
	"judge_fixture": func(cd *criterionDecoding, v *yaml.Node) {
		cd.c.JudgeAnswers = cd.l.judgeFixture(v, cd.what+".judge_fixture")
	},
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

// checkLLMJudge validates an llm_judge once its fields are read.
func checkLLMJudge(cd *criterionDecoding) {
	c, n := cd.c, cd.n
	switch {
	case cd.keys["rubric"] != nil && cd.keys["rubric_file"] != nil:
		cd.errorf(n, "give rubric or rubric_file, not both")
	case strings.TrimSpace(c.Rubric) == "" && cd.keys["rubric_file"] == nil:
		cd.errorf(n, "missing required field rubric (or rubric_file): what the judge grades, and how it maps to a score from 0 to 1")
	}
	if len(c.Files) > MaxJudgeFiles {
		cd.errorf(n, "files lists %d entries; at most %d", len(c.Files), MaxJudgeFiles)
	}
	if c.MaxFileBytes == 0 {
		c.MaxFileBytes = DefaultJudgeFileBytes
	}
	if c.Samples == 0 {
		c.Samples = 1
	}
	if cd.keys["pass_threshold"] == nil {
		c.PassThreshold = 0.7 // a judge's scores are graded, rarely 1 for good work
	}
}
