package task

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/rootfs"
)

// Solution is solution: the task's oracle, grader-only material that `ceval audit` runs to
// prove the task solvable. Exactly one of Script and Files is set. A normal run never puts
// it in the agent's container: it is opened at load through the task's directory like the
// reference, and a solution that the template or a plugin (what the container does get)
// holds is refused.
type Solution struct {
	Script *File // solution.script: run by a command agent in /workspace
	Files  *Dir  // solution.files: copied over the initial workspace
	Line   int   // where solution starts in the task file
	Column int
}

// Close releases the solution's handle.
func (s *Solution) Close() error {
	if s == nil {
		return nil
	}
	return errors.Join(s.Script.Close(), s.Files.Close())
}

// maxSolutionScanEntries bounds the walk of the container-bound material for the solution:
// the template's own bound, so no template valid without a solution is refused with one.
const maxSolutionScanEntries = maxTemplateEntries

func (l *loader) solution(n *yaml.Node) *Solution {
	rn := resolve(n)
	s := &Solution{Line: rn.Line, Column: rn.Column}
	got := l.mapping(n, "solution", []field{
		{"script", func(v *yaml.Node) { s.Script = l.openFile(v, "solution.script") }},
		{"files", func(v *yaml.Node) { s.Files = l.openDir(v, "solution.files") }},
	})
	if got == nil {
		return nil
	}
	if (got["script"] == nil) == (got["files"] == nil) {
		l.errorf(rn, "solution: give exactly one of script (a shell script run in /workspace by a command agent) or files (a directory copied over the initial workspace)")
		s.Close()
		return nil
	}
	return s
}

// checkSolutionHidden refuses a solution that would reach the agent's container in a normal
// run: one the template directory or a plugin holds, by path, symlink or hard link (the same
// file or directory, compared by device and inode).
func (l *loader) checkSolutionHidden(t *Task) {
	s := t.Solution
	if s == nil {
		return
	}
	var id fileID
	var err error
	what := "solution.script"
	if s.Files != nil {
		what = "solution.files"
		id, err = statID(s.Files.root.Stat("."))
	} else if s.Script != nil {
		id, err = statID(s.Script.f.Stat())
	} else {
		return
	}
	n := &yaml.Node{Line: s.Line, Column: s.Column}
	if err != nil {
		l.errorf(n, "%s: %v", what, err)
		return
	}
	check := func(d *Dir, name string) {
		if d == nil {
			return
		}
		p, err := findID(d.root, id)
		switch {
		case err != nil:
			l.errorf(n, "%s: cannot make sure %s does not hold the solution: %v", what, name, err)
		case p != "":
			l.errorf(n, "%s: %s holds the solution (at %s), so every agent would see it; keep the solution next to the task file, outside %s", what, name, p, name)
		}
	}
	check(t.Sandbox.Workspace.TemplateDir, "sandbox.workspace.template_dir")
	for i, d := range t.Sandbox.Workspace.TemplateOverlays {
		check(d, fmt.Sprintf("sandbox.workspace.template_dir[%d]", i+1))
	}
	for i, p := range t.Plugins {
		check(p.Dir, fmt.Sprintf("plugins[%d] (%s)", i, p.Name))
	}
}

type fileID struct{ dev, ino uint64 }

func statID(fi fs.FileInfo, err error) (fileID, error) {
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, fmt.Errorf("no device and inode for %s", fi.Name())
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, nil
}

// findID returns the path below root (root itself is ".") of the entry with identity id,
// or "" when none has it; links are not followed (the copy into the container recreates
// them as links).
func findID(root *os.Root, id fileID) (string, error) {
	found, entries := "", 0
	err := fs.WalkDir(rootfs.NonBlocking(root), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entries++; entries > maxSolutionScanEntries {
			return fmt.Errorf("more than %d entries", maxSolutionScanEntries)
		}
		got, err := statID(root.Lstat(p)) // through the handle: DirEntry.Info would lstat by path
		if err != nil {
			return err
		}
		if got == id {
			found = filepath.ToSlash(p)
			return fs.SkipAll
		}
		return nil
	})
	return found, err
}
