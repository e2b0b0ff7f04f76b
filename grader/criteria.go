package grader

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// readFile returns the captured bytes of the regular file at rel, or the verdict that the
// criterion gets when there is none: FAIL for anything the workspace did (missing, omitted
// by a cap, a link, a directory), ERROR when the snapshot itself cannot be read.
func readFile(ws *snapshot.Snapshot, rel string) ([]byte, *verdict) {
	s, in, ok := ws.Resolve(rel)
	if ok && isGlob(in) {
		// a glob names the one regular file it matches (coder_eval's paths may be globs)
		var files []string
		for _, e := range s.Glob(in) {
			if e.Kind == snapshot.KindFile {
				files = append(files, e.Path)
			}
		}
		switch len(files) {
		case 0:
			v := failed("no file in the workspace matches %s", rel)
			return nil, &v
		case 1:
			in = files[0]
		default:
			v := failed("%d files match %s (%s): the pattern must match exactly one", len(files), rel, list(quoteAll(files), 5))
			return nil, &v
		}
	}
	if !ok {
		v := failed("%s is below none of the task's sandbox.outputs; nothing outside them is copied out", rel)
		return nil, &v
	}
	e, ok := s.Lookup(in)
	if !ok {
		v := failed("%s", missing(s, rel, in))
		return nil, &v
	}
	switch e.Kind {
	case snapshot.KindSymlink:
		v := failed("%s is a symlink to %s; ceval does not follow links", rel, quote(e.Target, 200))
		return nil, &v
	case snapshot.KindDir:
		v := failed("%s is a directory, not a file", rel)
		return nil, &v
	case snapshot.KindFile:
		if e.Omitted != "" {
			v := failed("%s (%d bytes) omitted: %s; its content is not in the snapshot", rel, e.Size, e.Omitted)
			return nil, &v
		}
	default:
		v := failed("%s is a %s, not a regular file", rel, e.Kind)
		return nil, &v
	}
	data, err := s.ReadFile(in)
	if err != nil {
		v := errored("read %s from the snapshot: %v", rel, err)
		return nil, &v
	}
	return data, nil
}

// readText is readFile for criteria that read text: the content must be UTF-8.
func readText(s *snapshot.Snapshot, rel string) (string, *verdict) {
	data, v := readFile(s, rel)
	if v != nil {
		return "", v
	}
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		f := failed("%s is not UTF-8 text (invalid byte at offset %d)", rel, off)
		return "", &f
	}
	return string(data), nil
}

// missing explains why rel (in, inside s, which Resolve found for it) is not in the
// snapshot, with the snapshot's note when it has one.
func missing(s *snapshot.Snapshot, rel, in string) string {
	where := "the workspace"
	if in != rel {
		where = "its output's copy"
	}
	if n, ok := s.Unvouched(in); ok {
		return fmt.Sprintf("%s is not in the snapshot but may exist in %s (omitted: %s %s)", rel, where, quote(n.Path, 200), n.Reason)
	}
	if n, ok := s.NoteFor(in); ok {
		return fmt.Sprintf("%s is not in the snapshot: %s %s", rel, quote(n.Path, 200), n.Reason)
	}
	return fmt.Sprintf("%s does not exist in %s", rel, where)
}

func isGlob(p string) bool { return strings.ContainsAny(p, "*?[") }

func fileExists(c *task.FileExistsSpec, ws *snapshot.Snapshot) verdict {
	s, in, ok := ws.Resolve(c.Path)
	if !ok {
		return failed("%s is below none of the task's sandbox.outputs; nothing outside them is copied out", c.Path)
	}
	prefix := strings.TrimSuffix(c.Path, in) // "/output/" for an output's path, "" for the workspace's
	var matches []snapshot.Entry
	if isGlob(in) {
		matches = s.Glob(in)
	} else if e, ok := s.Lookup(in); ok {
		matches = []snapshot.Entry{e}
	}
	for i := range matches {
		matches[i].Path = prefix + matches[i].Path
	}
	var found, links, others []string
	for _, e := range matches {
		switch e.Kind {
		case snapshot.KindFile, snapshot.KindDir:
			found = append(found, quote(e.Path, 200))
		case snapshot.KindSymlink:
			links = append(links, fmt.Sprintf("%s is a symlink to %s", quote(e.Path, 200), quote(e.Target, 200)))
		default:
			others = append(others, fmt.Sprintf("%s is a %s", quote(e.Path, 200), e.Kind))
		}
	}
	if len(found) > 0 {
		return scored(1, "found "+list(found, 5))
	}
	if len(links) > 0 {
		return failed("%s; ceval does not follow links, and a link does not count", list(links, 5))
	}
	if len(others) > 0 {
		return failed("%s, not a regular file or directory", list(others, 5))
	}
	if !isGlob(c.Path) {
		return failed("%s", missing(s, c.Path, in))
	}
	if notes := notesMatching(s, in); len(notes) > 0 {
		return failed("nothing matching %s is in the snapshot: %s", c.Path, list(notes, 5))
	}
	if s.Truncated && len(s.Notes) > 0 {
		n := s.Notes[len(s.Notes)-1]
		return failed("nothing matching %s is in the snapshot, which stopped early: %s %s", c.Path, quote(n.Path, 200), n.Reason)
	}
	if dir, why, n := incompleteDirs(s); n > 0 {
		return failed("nothing matching %s is in the snapshot, but %d director(ies) have incomplete listings and may hold a match (omitted: %s directory %s)", c.Path, n, quote(dir, 200), why)
	}
	if prefix != "" {
		return failed("nothing in its output's copy matches %s", c.Path)
	}
	return failed("nothing in the workspace matches %s", c.Path)
}

// incompleteDirs counts the directories whose listing the snapshot omitted, and names the
// first.
func incompleteDirs(s *snapshot.Snapshot) (first, why string, n int) {
	if s.RootOmitted != "" {
		first, why, n = ".", s.RootOmitted, 1
	}
	for _, e := range s.Entries {
		if e.Kind == snapshot.KindDir && e.Omitted != "" {
			if n == 0 {
				first, why = e.Path, e.Omitted
			}
			n++
		}
	}
	return first, why, n
}

// notesMatching lists the snapshot notes whose path matches the glob pattern, matched
// exactly as the snapshot matches its entries.
func notesMatching(s *snapshot.Snapshot, pattern string) []string {
	byPath := map[string]snapshot.Note{}
	probe := &snapshot.Snapshot{}
	for _, n := range s.Notes {
		if _, dup := byPath[n.Path]; !dup {
			byPath[n.Path] = n
			probe.Entries = append(probe.Entries, snapshot.Entry{Path: n.Path, Kind: snapshot.KindFile})
		}
	}
	var out []string
	for _, e := range probe.Glob(pattern) {
		out = append(out, fmt.Sprintf("%s %s", quote(e.Path, 200), byPath[e.Path].Reason))
	}
	return out
}

// list joins items, keeping at most n and saying how many more there were.
func list(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

// category is one scored part of a file_contains or file_check: its fraction met and what
// was not met.
type category struct {
	met, total int
	unmet      []string
}

func (k category) fraction() float64 {
	if k.total == 0 {
		return 1 // an empty list given explicitly asks for nothing
	}
	return float64(k.met) / float64(k.total)
}

func includesCategory(text string, includes []string) category {
	k := category{total: len(includes)}
	for _, want := range includes {
		if strings.Contains(text, want) {
			k.met++
		} else {
			k.unmet = append(k.unmet, "missing "+quote(want, 80))
		}
	}
	return k
}

func excludesCategory(text string, excludes []string) category {
	k := category{total: len(excludes)}
	for _, bad := range excludes {
		if strings.Contains(text, bad) {
			k.unmet = append(k.unmet, "contains excluded "+quote(bad, 80))
		} else {
			k.met++
		}
	}
	return k
}

// meanOf scores categories as the mean of their fractions and describes what was unmet.
func meanOf(ks []category) verdict {
	if len(ks) == 0 {
		return scored(1, "nothing to check")
	}
	var sum float64
	var met, total int
	var unmet []string
	for _, k := range ks {
		sum += k.fraction()
		met += k.met
		total += k.total
		unmet = append(unmet, k.unmet...)
	}
	details := fmt.Sprintf("%d/%d checks met", met, total)
	if len(unmet) > 0 {
		details += ": " + list(unmet, 10)
	}
	v := scored(sum/float64(len(ks)), details)
	v.parts = &Parts{Met: met, Total: total}
	return v
}

func fileContains(c *task.FileContainsSpec, s *snapshot.Snapshot) verdict {
	text, v := readText(s, c.Path)
	if v != nil {
		return *v
	}
	var ks []category
	if c.Includes != nil {
		ks = append(ks, includesCategory(text, c.Includes))
	}
	if c.Excludes != nil {
		ks = append(ks, excludesCategory(text, c.Excludes))
	}
	return meanOf(ks)
}

func fileMatchesRegex(c *task.FileMatchesRegexSpec, s *snapshot.Snapshot) verdict {
	re, err := regexp.Compile(c.Pattern)
	if err != nil {
		return errored("pattern %q does not compile: %v", c.Pattern, err)
	}
	text, v := readText(s, c.Path)
	if v != nil {
		return *v
	}
	if re.MatchString(text) {
		return scored(1, fmt.Sprintf("pattern %q matches", c.Pattern))
	}
	return scored(0, fmt.Sprintf("pattern %q does not match", c.Pattern))
}

func fileCheck(c *task.FileCheckSpec, s *snapshot.Snapshot) verdict {
	res := make([]*regexp.Regexp, len(c.Patterns))
	for i, p := range c.Patterns {
		re, err := regexp.Compile(p.Pattern)
		if err != nil {
			return errored("patterns[%d] %q does not compile: %v", i, p.Pattern, err)
		}
		res[i] = re
	}
	text, v := readText(s, c.Path)
	if v != nil {
		return *v
	}
	var ks []category
	if c.Includes != nil {
		ks = append(ks, includesCategory(text, c.Includes))
	}
	if c.Excludes != nil {
		ks = append(ks, excludesCategory(text, c.Excludes))
	}
	if c.Patterns != nil {
		k := category{total: len(c.Patterns)}
		for i, p := range c.Patterns {
			matched := res[i].MatchString(text)
			switch {
			case matched == p.MustMatch:
				k.met++
			case p.MustMatch:
				k.unmet = append(k.unmet, fmt.Sprintf("pattern %q does not match", p.Pattern))
			default:
				k.unmet = append(k.unmet, fmt.Sprintf("pattern %q matches but must not", p.Pattern))
			}
		}
		ks = append(ks, k)
	}
	return meanOf(ks)
}

func classificationMatch(c *task.ClassificationMatchSpec, s *snapshot.Snapshot) verdict {
	text, v := readText(s, c.Path)
	if v != nil {
		v.label = &Label{Expected: canonicalLabel(c.ExpectedLabel, c)} // no prediction: a miss for the expected label
		return *v
	}
	label := canonicalLabel(strings.TrimSpace(text), c)
	out := scored(0, fmt.Sprintf("label %s, expected %q", quote(label, 80), c.ExpectedLabel))
	switch {
	case label == canonicalLabel(c.ExpectedLabel, c):
		out = scored(1, fmt.Sprintf("label %s", quote(label, 80)))
	case len(c.AllowedLabels) > 0 && !slices.Contains(c.AllowedLabels, label):
		out = scored(0, fmt.Sprintf("label %s is not among the allowed labels %s", quote(label, 80), list(quoteAll(c.AllowedLabels), 10)))
	}
	out.label = &Label{Expected: canonicalLabel(c.ExpectedLabel, c)}
	if len(label) <= max(MaxPredictedLabel, len(c.ExpectedLabel)) {
		out.label.Predicted = label
	}
	return out
}

// canonicalLabel is label spelt as the allowed label it equals up to case, when the
// criterion matches up to case (case_sensitive: false); label itself otherwise.
func canonicalLabel(label string, c *task.ClassificationMatchSpec) string {
	if c.CaseInsensitive {
		for _, l := range c.AllowedLabels {
			if strings.EqualFold(l, label) {
				return l
			}
		}
	}
	return label
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = quote(s, 80)
	}
	return out
}
