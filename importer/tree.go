package importer

import (
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"ceval.dev/ceval/task"
)

// FileResult is one converted input file and where its output went ("" when none was written).
type FileResult struct {
	Input, Output string
	Result
	// Invalid is what ceval's loader says of the output (nil: it loads).
	Invalid error
}

// OK says the file mapped completely and its output loads.
func (r FileResult) OK() bool { return r.Output != "" && r.Unmapped() == 0 && r.Invalid == nil }

// maxInput caps one task file's size (task files are hostile input).
const maxInput = 4 << 20

// ImportCoderEval converts each SRC (a task file, or a directory searched for *.yaml and
// *.yml) into outDir. A directory's tree is mirrored under outDir/<its name>, with its other
// regular files copied along (prompt files, references, templates), so the relative paths
// the tasks name keep working; a file is written to outDir/<its name>, beside a copy of its
// directory's other material. Symbolic links are never followed or copied: each one is
// reported, and so is every FIFO, socket or device (skipped). Every problem names FILE:LINE.
func ImportCoderEval(srcs []string, outDir string, opt Options) ([]FileResult, error) {
	if opt.Root != "" {
		return importRoot(srcs, outDir, opt)
	}
	var results []FileResult
	for _, src := range srcs {
		st, err := os.Lstat(src)
		if err != nil {
			return results, fmt.Errorf("%s: %v (give a coder_eval task file or a directory of them)", src, err)
		}
		var base, dst string
		var only func(rel string) bool
		switch {
		case st.IsDir():
			base, dst = src, filepath.Join(outDir, filepath.Base(filepath.Clean(src)))
			only = func(string) bool { return true }
		case st.Mode().IsRegular():
			base, dst = filepath.Dir(src), outDir
			only = func(rel string) bool { return rel == filepath.Base(src) }
		default:
			return results, fmt.Errorf("%s: not a regular file or directory (links are not followed)", src)
		}
		rs, err := importTree(base, dst, "", only, opt)
		results = append(results, rs...)
		if err != nil {
			return results, err
		}
	}
	return results, nil
}

// importRoot mirrors the declared root into outDir, converting the task files that are
// (or lie under) one of srcs.
func importRoot(srcs []string, outDir string, opt Options) ([]FileResult, error) {
	root, err := filepath.Abs(opt.Root)
	if err != nil {
		return nil, err
	}
	var rels []string
	for _, src := range srcs {
		abs, err := filepath.Abs(src)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil || !filepath.IsLocal(rel) && rel != "." {
			return nil, fmt.Errorf("%s is outside the declared root %s: give a --root that holds every SRC", src, root)
		}
		if _, err := os.Lstat(abs); err != nil {
			return nil, fmt.Errorf("%s: %v", src, err)
		}
		rels = append(rels, rel)
	}
	only := func(rel string) bool {
		for _, r := range rels {
			if r == "." || rel == r || strings.HasPrefix(rel, r+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
	return importTree(root, outDir, outDir, only, opt)
}

func isYAML(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
}

// importTree copies base's tree into dst, converting the YAML files only selects (by path
// relative to base); the others are copied as they are when a root is declared (valRoot,
// the root the outputs are validated in), left out otherwise.
func importTree(base, dst, valRoot string, only func(rel string) bool, opt Options) ([]FileResult, error) {
	var results []FileResult
	var pending []int
	skipped := map[string]string{} // output path -> input path, of entries not copied
	absOut, err := filepath.Abs(dst)
	if err != nil {
		return nil, err
	}
	err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(base, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			if abs, _ := filepath.Abs(p); abs == absOut && rel != "." {
				return filepath.SkipDir // the output lies inside the input: do not import it again
			}
			return os.MkdirAll(out, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			results = append(results, FileResult{Input: p, Result: Result{Problems: []Problem{{File: p, Line: 0, Field: "file",
				Reason: "a symbolic link: not followed and not copied; replace it with the file it names", Unmapped: true}}}})
			return nil
		case !d.Type().IsRegular():
			results = append(results, FileResult{Input: p, Result: Result{Problems: []Problem{{File: p, Field: "file",
				Reason: "not copied: not a regular file, directory or link", Unmapped: true, Skipped: entryKind(d.Type())}}}})
			if abs, err := filepath.Abs(out); err == nil {
				skipped[abs] = p
			}
			return nil
		case isYAML(d.Name()) && only(rel):
			data, err := readCapped(p)
			if err != nil {
				return err
			}
			r, err := coderEval(p, data, opt, taskFiles{readBeside(base, filepath.Dir(rel)), existsBeside(base, filepath.Dir(rel))})
			if err != nil {
				results = append(results, FileResult{Input: p, Result: Result{Problems: []Problem{{File: p, Line: 1, Field: "file", Reason: err.Error(), Unmapped: true}}}})
				return nil
			}
			fr := FileResult{Input: p, Result: r}
			if r.Output != nil {
				fr.Output = out
				if err := os.WriteFile(out, r.Output, 0o644); err != nil {
					return err
				}
				for _, name := range slices.Sorted(maps.Keys(r.Files)) {
					if err := os.WriteFile(filepath.Join(filepath.Dir(out), name), r.Files[name], 0o644); err != nil {
						return err
					}
				}
				pending = append(pending, len(results))
			}
			results = append(results, fr)
			return nil
		case isYAML(d.Name()) && valRoot == "":
			return nil // another task of a directory imported file by file
		default:
			return copyFile(p, out)
		}
	})
	// validate once the whole tree (the material the tasks name) is in place
	var tasks []string
	for _, i := range pending {
		if !results[i].Experiment {
			tasks = append(tasks, results[i].Output)
		}
	}
	for _, i := range pending {
		if results[i].Experiment {
			// with the tasks converted alongside, as the command line would name them, held
			// to the output tree (the mirror this import wrote)
			if len(tasks) == 0 {
				continue
			}
			top := valRoot
			if top == "" {
				top = dst
			}
			if _, verr := task.LoadExperiment(results[i].Output, task.ExperimentOptions{Root: top, Tasks: tasks}); verr != nil {
				results[i].Invalid = verr
			}
			continue
		}
		if ts, verr := task.LoadAll(results[i].Output, task.LoadOptions{Root: valRoot}); verr != nil {
			results[i].Invalid = verr
		} else {
			for _, t := range ts {
				results[i].Problems = append(results[i].Problems, referencesSkipped(results[i].Input, t, skipped)...)
				t.Close()
			}
		}
	}
	return results, err
}

// referencesSkipped reports each entry the import skipped that t's material is or holds:
// the task would not see it, so it did not map completely.
func referencesSkipped(input string, t *task.Task, skipped map[string]string) []Problem {
	var out []Problem
	for _, m := range task.Material(t) {
		for _, at := range slices.Sorted(maps.Keys(skipped)) {
			if at == m || strings.HasPrefix(at, m+string(filepath.Separator)) {
				out = append(out, Problem{File: input, Line: 1, Field: "file", Unmapped: true,
					Reason: fmt.Sprintf("the task references %s, which the import skipped (not a regular file)", skipped[at])})
			}
		}
	}
	return out
}

// entryKind names a directory entry's type that is not a regular file, directory or link.
func entryKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "irregular file"
}

func loadTask(p string) ([]*task.Task, error) {
	ts, err := task.LoadAll(p, task.LoadOptions{})
	for _, t := range ts {
		t.Close()
	}
	return ts, err
}

// readCapped reads a task file of at most maxInput bytes; a FIFO or device there is refused,
// never waited on.
func readCapped(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxInput+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxInput {
		return nil, fmt.Errorf("%s: over %d bytes: not a task file", p, maxInput)
	}
	return data, nil
}

// readBeside reads files a task names relative to its directory (dir, relative to base), never
// outside base (the declared root, or the imported directory), following no link out of it,
// each capped as a task file is.
func readBeside(base, dir string) func(string) ([]byte, error) {
	return func(rel string) ([]byte, error) {
		if filepath.IsAbs(rel) {
			return nil, fmt.Errorf("an absolute path: give it relative to the task file")
		}
		root, err := os.OpenRoot(base)
		if err != nil {
			return nil, err
		}
		defer root.Close()
		if st, err := root.Lstat(filepath.Join(dir, rel)); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("a symbolic link: not followed; replace it with the file it names")
		}
		f, err := root.OpenFile(filepath.Join(dir, rel), os.O_RDONLY|nonBlock, 0)
		if err != nil {
			return nil, fmt.Errorf("cannot read it inside %s: %v", base, err)
		}
		defer f.Close()
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			return nil, fmt.Errorf("not a regular file")
		}
		data, err := io.ReadAll(io.LimitReader(f, maxInput+1))
		if err != nil {
			return nil, err
		}
		if len(data) > maxInput {
			return nil, fmt.Errorf("over %d bytes", maxInput)
		}
		return data, nil
	}
}

// existsBeside says a regular file or directory (never a link) is at rel from dir, inside base.
func existsBeside(base, dir string) func(string) bool {
	return func(rel string) bool {
		if filepath.IsAbs(rel) {
			return false
		}
		root, err := os.OpenRoot(base)
		if err != nil {
			return false
		}
		defer root.Close()
		st, err := root.Lstat(filepath.Join(dir, rel))
		return err == nil && (st.Mode().IsRegular() || st.IsDir())
	}
}

// copyFile copies a regular file, refusing to follow a link swapped in after the walk.
func copyFile(src, dst string) error {
	in, err := os.OpenFile(src, os.O_RDONLY|noFollow|nonBlock, 0) // a FIFO swapped in is not waited on
	if err != nil {
		return err
	}
	defer in.Close()
	if st, err := in.Stat(); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", src)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
