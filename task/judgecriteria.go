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

// LLMJudgeSpec is an llm_judge: a model's verdict on workspace files, asked by ceval on the host.
type LLMJudgeSpec struct {
	Rubric         string   // the rubric's text (inline, or read from rubric_file)
	Files          []string // workspace paths or globs shown to the judge
	MaxFileBytes   int      // per file shown
	ReferenceFiles []string // paths or globs under the reference directory shown to the judge
	Samples        int      // verdicts asked; the median counts
	JudgeAnswers   []string // judge_fixture's answers (replay), nil for a live judge
}

func newLLMJudgeSpec() *LLMJudgeSpec { return &LLMJudgeSpec{} }

// rubricFields read rubric and rubric_file (llm_judge's and agent_judge's) into dst.
func rubricFields(dst *string) []criterionField {
	return []criterionField{
		{"rubric", func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".rubric", dst) }},
		{"rubric_file", func(cd *criterionDecoding, v *yaml.Node) {
			if p, data := cd.l.readFile(v, cd.what+".rubric_file"); p != "" {
				*dst = string(data)
			}
		}},
	}
}

func (s *LLMJudgeSpec) fields() []criterionField {
	return append(rubricFields(&s.Rubric), []criterionField{
		{"files", func(cd *criterionDecoding, v *yaml.Node) {
			cd.l.list(v, cd.what+".files", func(i int, item *yaml.Node) {
				if p := cd.l.criterionPath(item, fmt.Sprintf("%s.files[%d]", cd.what, i), true); p != "" {
					s.Files = append(s.Files, p)
				}
			})
		}},
		{"max_file_bytes", func(cd *criterionDecoding, v *yaml.Node) {
			n := int64(DefaultJudgeFileBytes)
			cd.l.integer(v, cd.what+".max_file_bytes", 1, MaxJudgeFileBytes, &n)
			s.MaxFileBytes = int(n)
		}},
		{"reference_files", func(cd *criterionDecoding, v *yaml.Node) {
			cd.l.strings(v, cd.what+".reference_files", &s.ReferenceFiles)
			for _, p := range s.ReferenceFiles {
				if path.IsAbs(p) || p != path.Clean(p) || p == ".." || strings.HasPrefix(p, "../") {
					cd.l.errorf(resolve(v), "%s.reference_files: %q must be a clean path relative to reference.directory", cd.what, p)
				}
			}
		}},
		{"samples", func(cd *criterionDecoding, v *yaml.Node) {
			n := int64(1)
			cd.l.integer(v, cd.what+".samples", 1, MaxJudgeSamples, &n)
			s.Samples = int(n)
		}},
		{"judge_fixture", func(cd *criterionDecoding, v *yaml.Node) {
			s.JudgeAnswers = cd.l.judgeFixture(v, cd.what+".judge_fixture")
		}},
	}...)
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

// check validates an llm_judge once its fields are read.
func (c *LLMJudgeSpec) check(cd *criterionDecoding) {
	n := cd.n
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
		cd.c.PassThreshold = 0.7 // a judge's scores are graded, rarely 1 for good work
	}
}
