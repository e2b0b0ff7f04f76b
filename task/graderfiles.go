package task

import (
	"errors"
	"path/filepath"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// GraderFile is one grader_files entry: a file or directory inside the task's directory
// that executing criteria see, read-only, at /task/Rel (TASK_DIR=/task). Grader files never
// enter the agent's container.
type GraderFile struct {
	// Root is the directory Rel is inside (the task's or, from an experiment, the
	// experiment's), held open since load: every read of the entry goes through it.
	Root *Dir
	Rel  string // clean, relative, never leaving Root
	Dir  bool
}

// graderFiles reads grader_files: a list of paths inside the task's directory, each an
// existing file or directory, confined like every task path (no absolute path, no "..",
// no symlink out).
func (l *loader) graderFiles(n *yaml.Node) []GraderFile {
	var out []GraderFile
	l.list(n, "grader_files", func(i int, item *yaml.Node) {
		what := "grader_files[" + strconv.Itoa(i) + "]"
		rel, ok := l.taskRel(item, what)
		if !ok {
			return
		}
		root, _ := l.base(item)
		fi, err := root.Lstat(rel)
		if err != nil {
			l.errorf(resolve(item), "%s: %s", what, describeRootErr(rel, err))
			return
		}
		if !fi.IsDir() && !fi.Mode().IsRegular() {
			l.errorf(resolve(item), "%s: %q is neither a regular file nor a directory", what, rel)
			return
		}
		if rel == "." {
			l.errorf(resolve(item), "%s: the whole task directory would hold the task file and the reference; name the directories the checks need (e.g. checks/, tests/)", what)
			return
		}
		if base := l.baseDir(item); base != nil {
			out = append(out, GraderFile{Root: base, Rel: filepath.ToSlash(rel), Dir: fi.IsDir()})
		}
	})
	return out
}

// attachGraderFiles gives every executing criterion the task's grader files, and a pytest
// criterion its tests too.
func attachGraderFiles(t *Task) {
	for i := range t.Criteria {
		c := &t.Criteria[i]
		e := c.Execution()
		if e == nil {
			continue
		}
		var tests *GraderFile
		if s, ok := c.Spec.(*PytestSpec); ok {
			tests = s.Tests
		}
		e.GraderFiles = withTests(t.GraderFiles, tests)
		e.PythonPackages = mergePackages(t.PythonPackages, e.PythonPackages)
		e.PythonWheels = mergeWheels(t.PythonWheels, e.PythonWheels)
	}
}

// baseDir is a handle of the directory n's paths resolve in (the task's or the experiment's),
// opened once per loader and held by the task (Task.Close releases it).
func (l *loader) baseDir(n *yaml.Node) *Dir {
	root, base := l.base(n)
	if d := l.baseDirs[base]; d != nil {
		return d
	}
	r, err := root.OpenRoot(".")
	if err != nil {
		l.errorf(resolve(n), "%s: %v", base, err)
		return nil
	}
	if l.baseDirs == nil {
		l.baseDirs = map[string]*Dir{}
	}
	d := &Dir{Path: base, root: r}
	l.baseDirs[base] = d
	return d
}

// closeGraderFiles releases the directories the grader files are read through.
func closeGraderFiles(files []GraderFile) error {
	var errs []error
	seen := map[*Dir]bool{}
	for _, f := range files {
		if f.Root != nil && !seen[f.Root] {
			seen[f.Root] = true
			errs = append(errs, f.Root.Close())
		}
	}
	return errors.Join(errs...)
}
