package task

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Task material (the reference, template_dir, plugins, wasm modules) is opened once, at load,
// through the task's os.Root, and kept open: everything ceval reads from it later goes through
// that handle. A path swapped after validation (ref/ replaced by a symlink to /etc while a run
// is under way) changes nothing ceval serves or grades. The paths kept beside the handles are
// for messages and records only; nothing opens them again.

// noFollow makes an open fail on a symlink in the last component.
const noFollow = syscall.O_NOFOLLOW

// Dir is a directory of task material opened at load.
type Dir struct {
	Path string // absolute, as validated; never opened again
	root *os.Root
}

// OpenDir opens dir as task material, for callers that build a Task themselves (tests, a
// grade that names its own reference). Load opens a task's directories itself.
func OpenDir(dir string) (*Dir, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	return &Dir{Path: abs, root: r}, nil
}

// path is the directory's path as validated, "" for none.
func (d *Dir) path() string {
	if d == nil {
		return ""
	}
	return d.Path
}

// Sub opens rel, a directory below d, through d's handle (never by path): the caller
// closes it.
func (d *Dir) Sub(rel string) (*Dir, error) {
	r, err := d.root.OpenRoot(rel + "/.") // "/.": a FIFO there fails as not a directory, never blocks
	if err != nil {
		return nil, err
	}
	return &Dir{Path: filepath.Join(d.Path, rel), root: r}, nil
}

// Root is the directory's handle: an os.Root, which refuses any path or link that leaves it.
// Callers must not close it (Task.Close does).
func (d *Dir) Root() *os.Root {
	if d == nil {
		return nil
	}
	return d.root
}

// Close releases the handle.
func (d *Dir) Close() error {
	if d == nil || d.root == nil {
		return nil
	}
	return d.root.Close()
}

// File is a regular file of task material opened at load (a wasm criterion's module).
type File struct {
	Path string // absolute, as validated; never opened again
	f    *os.File
}

// OpenFile opens a regular file as task material, for callers that build a Task themselves.
func OpenFile(name string) (*File, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, err
	}
	f, err := openRegular(func(flag int) (*os.File, error) { return os.OpenFile(abs, flag, 0) }, name)
	if err != nil {
		return nil, err
	}
	return &File{Path: abs, f: f}, nil
}

// ReadAll reads the whole file from its start through the handle (safe to call again and
// from several goroutines); a file over limit bytes is an error.
func (f *File) ReadAll(limit int64) ([]byte, error) {
	if f == nil || f.f == nil {
		return nil, errors.New("task file was not opened at load")
	}
	data, err := io.ReadAll(io.NewSectionReader(f.f, 0, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", f.Path, limit)
	}
	return data, nil
}

// Close releases the handle.
func (f *File) Close() error {
	if f == nil || f.f == nil {
		return nil
	}
	return f.f.Close()
}

// openRegular opens a file read-only without blocking (a FIFO planted as task material must
// not hang ceval) and keeps it only if the opened file is a regular one.
func openRegular(open func(flag int) (*os.File, error), name string) (*os.File, error) {
	f, err := open(os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%q is not a regular file (%s)", name, fileKind(fi.Mode()))
	}
	return f, nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// Close releases every handle the task holds on its material. A task is still usable for
// what was read at load (prompt, criteria, fixtures) but not for running or grading.
func (t *Task) Close() error {
	if t == nil {
		return nil
	}
	var errs []error
	errs = append(errs, t.Reference.Close(), closeGraderFiles(t.GraderFiles), t.Sandbox.Workspace.TemplateDir.Close(), t.Solution.Close())
	for _, d := range t.Sandbox.Workspace.TemplateOverlays {
		errs = append(errs, d.Close())
	}
	for _, p := range t.Plugins {
		errs = append(errs, p.Dir.Close())
	}
	for _, c := range t.Criteria {
		if s, ok := c.Spec.(*WASMSpec); ok {
			errs = append(errs, s.Module.Close())
		}
	}
	for _, s := range t.Services {
		errs = append(errs, s.Files.Close())
	}
	errs = append(errs, closeTaskSteps(t.TaskSteps)...)
	return errors.Join(errs...)
}

// Close releases the material handles of every task of the experiment.
func (e *Experiment) Close() error {
	if e == nil {
		return nil
	}
	var errs []error
	for _, en := range e.Entries {
		errs = append(errs, en.Task.Close())
	}
	return errors.Join(errs...)
}
