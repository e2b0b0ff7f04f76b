package task

import (
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// Pytest is a criterion that runs pytest over the task's tests in the WASM sandbox, with the
// agent's workspace importable; score = passed / collected, or all-or-nothing.
const Pytest = "pytest"

// pytestTests reads a pytest criterion's tests: a file or directory inside the task's
// directory, which becomes one of that criterion's grader files (at /task/Rel).
func (l *loader) pytestTests(n *yaml.Node, what string, dst **GraderFile) {
	rel, ok := l.taskRel(n, what)
	if !ok {
		return
	}
	root, _ := l.base(n)
	fi, err := root.Lstat(rel)
	if err != nil {
		l.errorf(resolve(n), "%s: %s", what, describeRootErr(rel, err))
		return
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		l.errorf(resolve(n), "%s: %q is neither a regular file nor a directory", what, rel)
		return
	}
	if rel == "." {
		l.errorf(resolve(n), "%s: the whole task directory would hold the task file and the reference; put the tests in a directory (e.g. tests/)", what)
		return
	}
	if base := l.baseDir(n); base != nil {
		*dst = &GraderFile{Root: base, Rel: filepath.ToSlash(rel), Dir: fi.IsDir()}
	}
}

// withTests is files plus the criterion's tests unless an entry of files already holds them.
func withTests(files []GraderFile, tests *GraderFile) []GraderFile {
	if tests == nil {
		return files
	}
	for _, f := range files {
		if f.Root == tests.Root && (f.Rel == tests.Rel || f.Dir && isUnder(tests.Rel, f.Rel)) {
			return files
		}
	}
	return append(append([]GraderFile(nil), files...), *tests)
}

func isUnder(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && filepath.IsLocal(rel)
}
