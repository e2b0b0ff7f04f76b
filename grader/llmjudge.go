package grader

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"ceval.dev/ceval/judge"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// maxJudgeInputBytes caps the workspace content one llm_judge shows, all files together.
const maxJudgeInputBytes = 512 << 10

// llmJudge asks the judge model (or the criterion's fixture) for a verdict on the files.
// A provider failure or a spent budget is ceval's side (ERROR); an answer that is not a
// strict verdict twice FAILs, with the raw answer in the details.
func llmJudge(ctx context.Context, c *task.LLMJudgeSpec, s *snapshot.Snapshot, opts Options) verdict {
	j := opts.Judge
	if c.JudgeAnswers != nil {
		if j == nil {
			j = judge.NewReplay(nil, nil)
		}
		j = j.WithFixture(&judge.Fixture{Answers: c.JudgeAnswers})
	}
	if j == nil {
		return verdict{forced: NotGraded, details: "no judge: configure judge: {api, model} in ceval's config (ceval run), or give the criterion a judge_fixture"}
	}
	shown, leftOut := judgeFiles(c, s)
	req := judge.Request{Rubric: c.Rubric, Samples: c.Samples, Files: shown, LeftOut: leftOut}
	if len(c.ReferenceFiles) > 0 {
		ref, err := referenceFiles(opts.Reference, c.ReferenceFiles, c.MaxFileBytes)
		if err != nil {
			return errored("reference_files: %v", err)
		}
		req.Reference = ref
	}
	note := inputNote(c, shown, leftOut, req.Reference)
	v, err := j.Judge(ctx, req)
	if errors.Is(err, judge.ErrInputTooLong) {
		// The files are the workspace's: their length is the agent's doing.
		return failed("llm_judge: the workspace's files given to the judge are more than its model takes (%v); the agent left them so%s", err, note)
	}
	if err != nil {
		return errored("llm_judge: %v%s", err, note)
	}
	if v.Malformed != "" {
		return failed("the judge's answer was not a strict JSON verdict ({\"score\": 0..1, \"reasons\": ...}), twice; it answered %s%s", quote(v.Malformed, 500), note)
	}
	what := fmt.Sprintf("judge score %.3g", v.Score)
	if len(v.Samples) > 1 {
		what += fmt.Sprintf(" (median of %v)", v.Samples)
	}
	if v.Reused > 0 {
		what += fmt.Sprintf(", %s reused from the recorded judgment", plural(v.Reused, "sample", "samples"))
	}
	if hidden := overInputCaps(c, shown, leftOut); hidden != "" {
		// The judge passed what it saw; what it did not see is the agent's too, and may be
		// exactly what fails the rubric: an agent could pad its files, or add files a glob
		// matches, until the damning part falls past the cap (issue 32 item 5).
		return failed("llm_judge: the judge was not shown all of the agent's files: %s. Its verdict cannot pass what it did not see, so the criterion fails whatever it scored; the agent left that much: name fewer files or narrower globs (%s: %s)%s",
			hidden, what, quote(v.Reasons, 600), note)
	}
	return scored(v.Score, what+": "+quote(v.Reasons, 1200)+note)
}

// overInputCaps says which files the judge was not shown whole because of ceval's caps on
// the whole input, by cap: left out by the file cap, left out by the 512 KiB of all files,
// cut short of max_file_bytes by it; "" when none was. A file cut to max_file_bytes, the
// window the task author gives each file, does not count: the judge is told it was cut and
// judges with that.
func overInputCaps(c *task.LLMJudgeSpec, shown, leftOut []judge.File) string {
	var byFiles, byBytes, cut int
	for _, f := range leftOut {
		if strings.Contains(f.Missing, "file cap") {
			byFiles++
		} else {
			byBytes++
		}
	}
	for _, f := range shown {
		if f.Truncated && int64(len(f.Content)) < min(f.Size, int64(c.MaxFileBytes)) {
			cut++
		}
	}
	var parts []string
	if byFiles > 0 {
		parts = append(parts, fmt.Sprintf("%s left out by its file cap of %d files", plural(byFiles, "file was", "files were"), maxJudgeEntries))
	}
	if byBytes > 0 {
		parts = append(parts, fmt.Sprintf("%s left out by its input cap of %d KiB of files in all", plural(byBytes, "file was", "files were"), maxJudgeInputBytes>>10))
	}
	if cut > 0 {
		parts = append(parts, fmt.Sprintf("%s cut short by its input cap of %d KiB of files in all", plural(cut, "file was", "files were"), maxJudgeInputBytes>>10))
	}
	return strings.Join(parts, ", and ")
}

// maxJudgeEntries caps the files framed for one llm_judge: the files named first, then the
// globs' matches, in the criterion's order; the rest are listed to the judge as left out.
const maxJudgeEntries = 2 * task.MaxJudgeFiles

// judgeFiles collects the criterion's files from the snapshot, each cut to MaxFileBytes and
// all together to maxJudgeInputBytes. What cannot be shown says why; what a cap leaves out
// is returned apart (leftOut), with why.
func judgeFiles(c *task.LLMJudgeSpec, ws *snapshot.Snapshot) (shown, leftOut []judge.File) {
	total := 0
	seen := map[string]bool{}
	// add shows entry e of s (the workspace's snapshot, or an output's, whose paths are
	// shown under prefix).
	add := func(s *snapshot.Snapshot, prefix string, e snapshot.Entry) {
		e.Path = prefix + e.Path
		rel := strings.TrimPrefix(e.Path, prefix)
		if seen[e.Path] {
			return
		}
		seen[e.Path] = true
		f := judge.File{Path: e.Path, Size: e.Size}
		switch {
		case len(shown) >= maxJudgeEntries:
			f.Missing = fmt.Sprintf("left out: over the file cap of %d files", maxJudgeEntries)
		case e.Kind == snapshot.KindSymlink:
			f.Missing = "a symlink; ceval does not follow links"
		case e.Kind != snapshot.KindFile:
			f.Missing = fmt.Sprintf("a %s, not a file", e.Kind)
		case total >= maxJudgeInputBytes:
			f.Missing = fmt.Sprintf("left out: the judge's input cap of %d KiB was reached", maxJudgeInputBytes>>10)
		default:
			data, err := s.ReadFile(rel)
			if err != nil {
				f.Missing = "could not be read from the snapshot"
				break
			}
			n := min(len(data), c.MaxFileBytes, maxJudgeInputBytes-total)
			f.Content, f.Truncated = data[:n], n < len(data)
			total += n
		}
		if strings.HasPrefix(f.Missing, "left out: ") {
			leftOut = append(leftOut, f)
			return
		}
		shown = append(shown, f)
	}
	for _, p := range c.Files { // named files first: a glob's matches never crowd them out
		if isGlob(p) {
			continue
		}
		s, in, ok := ws.Resolve(p)
		if !ok {
			shown = append(shown, judge.File{Path: p, Missing: "below none of the task's sandbox.outputs"})
			continue
		}
		if e, ok := s.Lookup(in); ok {
			add(s, strings.TrimSuffix(p, in), e)
		} else {
			shown = append(shown, judge.File{Path: p, Missing: "not in the workspace"})
		}
	}
	for _, p := range c.Files {
		if !isGlob(p) {
			continue
		}
		s, in, ok := ws.Resolve(p)
		if !ok {
			shown = append(shown, judge.File{Path: p, Missing: "below none of the task's sandbox.outputs"})
			continue
		}
		matches := s.Glob(in)
		if len(matches) == 0 {
			shown = append(shown, judge.File{Path: p, Missing: "nothing in the workspace matches"})
		}
		for _, e := range matches {
			if e.Kind != snapshot.KindDir {
				add(s, strings.TrimSuffix(p, in), e)
			}
		}
	}
	return shown, leftOut
}

// maxLeftOutInDetails bounds the left-out and cut files named in a criterion's details.
const maxLeftOutInDetails = 100

// inputNote says, for the criterion's details, what of its files the judge was not shown
// whole: each left out (and why) and each cut; "" when it saw everything.
func inputNote(c *task.LLMJudgeSpec, shown, leftOut, reference []judge.File) string {
	var parts []string
	byWhy := map[string][]string{}
	var whys []string
	for _, f := range leftOut {
		why := strings.TrimPrefix(f.Missing, "left out: ")
		if byWhy[why] == nil {
			whys = append(whys, why)
		}
		byWhy[why] = append(byWhy[why], f.Path)
	}
	for _, why := range whys {
		parts = append(parts, fmt.Sprintf("%s left out (%s): %s", plural(len(byWhy[why]), "file", "files"), why, names(byWhy[why])))
	}
	var cut []string
	for _, f := range shown {
		if f.Truncated {
			cut = append(cut, fmt.Sprintf("%s (%d of %d bytes)", f.Path, len(f.Content), f.Size))
		}
	}
	if len(cut) > 0 {
		parts = append(parts, fmt.Sprintf("%s cut (max_file_bytes %d, or the judge's input cap of %d KiB): %s",
			plural(len(cut), "file", "files"), c.MaxFileBytes, maxJudgeInputBytes>>10, names(cut)))
	}
	cut = nil
	for _, f := range reference {
		if f.Truncated {
			cut = append(cut, fmt.Sprintf("%s (%d of %d bytes)", f.Path, len(f.Content), f.Size))
		}
	}
	if len(cut) > 0 {
		parts = append(parts, fmt.Sprintf("%s of the reference cut (max_file_bytes %d): %s", plural(len(cut), "file", "files"), c.MaxFileBytes, names(cut)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; the judge was not shown all: " + strings.Join(parts, "; ")
}

// names joins list, naming at most maxLeftOutInDetails and counting the rest.
func names(list []string) string {
	if len(list) <= maxLeftOutInDetails {
		return strings.Join(list, ", ")
	}
	return strings.Join(list[:maxLeftOutInDetails], ", ") + fmt.Sprintf(", and %d more", len(list)-maxLeftOutInDetails)
}

// referenceFiles reads the reference material through an os.Root, so no link leads the
// judge outside the reference directory.
func referenceFiles(dir *task.Dir, patterns []string, maxBytes int) ([]judge.File, error) {
	if dir == nil {
		return nil, errors.New("the task has no reference.directory")
	}
	root := dir.Root() // the handle held since load: what was validated is what is shown
	var out []judge.File
	for _, p := range patterns {
		matches, err := fs.Glob(root.FS(), p)
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%q matches nothing in %s", p, dir.Path)
		}
		for _, m := range matches {
			if st, err := root.Stat(m); err == nil && st.IsDir() {
				continue
			}
			data, err := root.ReadFile(m)
			if err != nil {
				return nil, err
			}
			n := min(len(data), maxBytes)
			out = append(out, judge.File{Path: m, Content: data[:n], Size: int64(len(data)), Truncated: n < len(data)})
		}
	}
	return out, nil
}
