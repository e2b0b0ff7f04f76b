package grader

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"ceval.dev/ceval/judge"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// maxJudgeInputBytes caps the workspace content one llm_judge shows, all files together.
const maxJudgeInputBytes = 512 << 10

// llmJudge asks the judge model (or the criterion's fixture) for a verdict on the files.
// A provider failure or a spent budget is ceval's side (ERROR); an answer that is not a
// strict verdict twice FAILs, with the raw answer in the details.
func llmJudge(ctx context.Context, c *task.Criterion, s *snapshot.Snapshot, opts Options) verdict {
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
	req := judge.Request{Rubric: c.Rubric, Samples: c.Samples, Files: judgeFiles(c, s)}
	if len(c.ReferenceFiles) > 0 {
		ref, err := referenceFiles(opts.Reference, c.ReferenceFiles, c.MaxFileBytes)
		if err != nil {
			return errored("reference_files: %v", err)
		}
		req.Reference = ref
	}
	v, err := j.Judge(ctx, req)
	if err != nil {
		return errored("llm_judge: %v", err)
	}
	if v.Malformed != "" {
		return failed("the judge's answer was not a strict JSON verdict ({\"score\": 0..1, \"reasons\": ...}), twice; it answered %s", quote(v.Malformed, 500))
	}
	what := fmt.Sprintf("judge score %.3g", v.Score)
	if len(v.Samples) > 1 {
		what += fmt.Sprintf(" (median of %v)", v.Samples)
	}
	if v.Reused > 0 {
		what += fmt.Sprintf(", %s reused from the recorded judgment", plural(v.Reused, "sample", "samples"))
	}
	return scored(v.Score, what+": "+quote(v.Reasons, 1200))
}

// judgeFiles collects the criterion's files from the snapshot, each cut to MaxFileBytes and
// all together to maxJudgeInputBytes; what cannot be shown says why.
func judgeFiles(c *task.Criterion, s *snapshot.Snapshot) []judge.File {
	var out []judge.File
	total := 0
	seen := map[string]bool{}
	add := func(e snapshot.Entry) {
		if seen[e.Path] || len(out) >= 2*task.MaxJudgeFiles {
			return
		}
		seen[e.Path] = true
		f := judge.File{Path: e.Path, Size: e.Size}
		switch e.Kind {
		case snapshot.KindFile:
		case snapshot.KindSymlink:
			f.Missing = "a symlink; ceval does not follow links"
		default:
			f.Missing = fmt.Sprintf("a %s, not a file", e.Kind)
		}
		if f.Missing == "" {
			data, err := s.ReadFile(e.Path)
			switch {
			case err != nil:
				f.Missing = "could not be read from the snapshot"
			case total >= maxJudgeInputBytes:
				f.Missing = fmt.Sprintf("left out: the judge's input cap of %d KiB was reached", maxJudgeInputBytes>>10)
			default:
				n := min(len(data), c.MaxFileBytes, maxJudgeInputBytes-total)
				f.Content, f.Truncated = data[:n], n < len(data)
				total += n
			}
		}
		out = append(out, f)
	}
	for _, p := range c.Files {
		if isGlob(p) {
			matches := s.Glob(p)
			if len(matches) == 0 {
				out = append(out, judge.File{Path: p, Missing: "nothing in the workspace matches"})
			}
			for _, e := range matches {
				if e.Kind != snapshot.KindDir {
					add(e)
				}
			}
			continue
		}
		if e, ok := s.Lookup(p); ok {
			add(e)
		} else {
			out = append(out, judge.File{Path: p, Missing: "not in the workspace"})
		}
	}
	return out
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
