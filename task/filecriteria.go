package task

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// The criteria on workspace files. Path is workspace-relative or below one of
// sandbox.outputs: a glob, which any match satisfies for file_exists and which must match
// exactly one file for the others.

// FileExistsSpec is a file_exists: a file at Path (a glob: any match).
type FileExistsSpec struct {
	Path string
}

// FileContainsSpec is a file_contains: the file holds every include and no exclude.
type FileContainsSpec struct {
	Path               string
	Includes, Excludes []string
}

// FileMatchesRegexSpec is a file_matches_regex: Pattern matches the file's text.
type FileMatchesRegexSpec struct {
	Path    string
	Pattern string
}

// FileCheckSpec is a file_check: file_contains's strings and regular expressions, each
// scored.
type FileCheckSpec struct {
	Path               string
	Includes, Excludes []string
	Patterns           []PatternCheck
}

// JSONCheckSpec is a json_check: the file is JSON that passes the schema and assertions.
type JSONCheckSpec struct {
	Path       string
	JSONSchema any    // decoded JSON Schema document (inline or from a file), nil when none
	SchemaFile string // absolute path when the schema came from a file
	Assertions []Assertion
}

// ClassificationMatchSpec is a classification_match: the file's label is ExpectedLabel.
type ClassificationMatchSpec struct {
	Path          string
	ExpectedLabel string
	AllowedLabels []string
	// CaseInsensitive (case_sensitive: false) matches the label up to case and records
	// the allowed label's spelling; exact by default.
	CaseInsensitive bool
}

func pathField(dst *string) criterionField {
	return criterionField{"path", func(cd *criterionDecoding, v *yaml.Node) { *dst = cd.l.criterionPath(v, cd.what+".path", true) }}
}

func stringsField(name string, dst *[]string) criterionField {
	return criterionField{name, func(cd *criterionDecoding, v *yaml.Node) { cd.l.strings(v, cd.what+"."+name, dst) }}
}

func (s *FileExistsSpec) fields() []criterionField { return []criterionField{pathField(&s.Path)} }

func (s *FileExistsSpec) check(cd *criterionDecoding) { cd.need("path") }

func (s *FileContainsSpec) fields() []criterionField {
	return []criterionField{pathField(&s.Path), stringsField("includes", &s.Includes), stringsField("excludes", &s.Excludes)}
}

func (s *FileContainsSpec) check(cd *criterionDecoding) {
	cd.need("path")
	if cd.vals["includes"] == nil && cd.vals["excludes"] == nil {
		cd.errorf(cd.n, "give includes, excludes or both")
	}
}

func (s *FileMatchesRegexSpec) fields() []criterionField {
	return []criterionField{pathField(&s.Path),
		{"pattern", func(cd *criterionDecoding, v *yaml.Node) { cd.l.regex(v, cd.what+".pattern", &s.Pattern) }}}
}

func (s *FileMatchesRegexSpec) check(cd *criterionDecoding) {
	cd.need("path")
	cd.need("pattern")
}

func (s *FileCheckSpec) fields() []criterionField {
	return []criterionField{pathField(&s.Path), stringsField("includes", &s.Includes), stringsField("excludes", &s.Excludes),
		{"patterns", func(cd *criterionDecoding, v *yaml.Node) {
			l := cd.l
			l.list(v, cd.what+".patterns", func(j int, item *yaml.Node) {
				pw := fmt.Sprintf("%s.patterns[%d]", cd.what, j)
				p := PatternCheck{MustMatch: true}
				got := l.mapping(item, pw, []field{
					{"pattern", func(v *yaml.Node) { l.regex(v, pw+".pattern", &p.Pattern) }},
					{"must_match", func(v *yaml.Node) { l.boolean(v, pw+".must_match", &p.MustMatch) }},
				})
				if got != nil && got["pattern"] == nil {
					l.errorf(item, "%s: missing required field pattern", pw)
				}
				s.Patterns = append(s.Patterns, p)
			})
		}}}
}

func (s *FileCheckSpec) check(cd *criterionDecoding) {
	cd.need("path")
	if cd.vals["includes"] == nil && cd.vals["excludes"] == nil && cd.vals["patterns"] == nil {
		cd.errorf(cd.n, "give at least one of includes, excludes, patterns")
	}
}

func (s *JSONCheckSpec) fields() []criterionField {
	return []criterionField{pathField(&s.Path),
		{"json_schema", func(cd *criterionDecoding, v *yaml.Node) { cd.l.jsonSchema(v, cd.what+".json_schema", s) }},
		{"assertions", func(cd *criterionDecoding, v *yaml.Node) { cd.l.assertions(v, cd.what+".assertions", s) }}}
}

func (s *JSONCheckSpec) check(cd *criterionDecoding) {
	cd.need("path")
	if cd.vals["json_schema"] == nil && len(s.Assertions) == 0 && cd.keys["assertions"] == nil {
		cd.errorf(cd.n, "give json_schema, assertions or both")
	}
}

func (s *ClassificationMatchSpec) fields() []criterionField {
	return []criterionField{pathField(&s.Path),
		{"expected_label", func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".expected_label", &s.ExpectedLabel) }},
		stringsField("allowed_labels", &s.AllowedLabels),
		{"case_sensitive", func(cd *criterionDecoding, v *yaml.Node) {
			sensitive := true
			cd.l.boolean(v, cd.what+".case_sensitive", &sensitive)
			s.CaseInsensitive = !sensitive
		}}}
}

func (s *ClassificationMatchSpec) check(cd *criterionDecoding) {
	cd.need("path")
	cd.need("expected_label")
	if len(s.AllowedLabels) > 0 && s.ExpectedLabel != "" && !containsLabel(s.AllowedLabels, s.ExpectedLabel, s.CaseInsensitive) {
		cd.errorf(cd.n, "expected_label %q is not among allowed_labels", s.ExpectedLabel)
	}
}
