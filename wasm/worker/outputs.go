package worker

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"ceval.dev/ceval/wasm/wire"
)

// outputView is the view of one of the task's sandbox.outputs: mounted read-only at its
// path, or, at /tmp or below it, copied into each run's writable /tmp (the guest's scratch
// space stays writable).
type outputView struct {
	path string
	fs   *memFS
}

// maxOutputViews bounds the output views a worker holds (task.MaxOutputs).
const maxOutputViews = 8

// reservedGuestPaths are the guest's own mounts (and its root's mount points); an output
// view may be at /tmp or below it, and nowhere else among them.
var reservedGuestPaths = []string{"/workspace", "/reference", "/task", "/ceval", wire.PythonStdlibDir}

// validOutputPath reports whether p may hold an output view: absolute, clean, not "/",
// and not over or under the guest's own mounts.
func validOutputPath(p string) bool {
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/" || strings.ContainsRune(p, 0) {
		return false
	}
	for _, r := range reservedGuestPaths {
		if p == r || strings.HasPrefix(p, r+"/") || strings.HasPrefix(r, p+"/") {
			return false
		}
	}
	return true
}

// inTmp is an output path's place in /tmp ("" for /tmp itself), or ok false when it is
// not in /tmp.
func inTmp(p string) (string, bool) {
	if p == "/tmp" {
		return "", true
	}
	rel, ok := strings.CutPrefix(p, "/tmp/")
	return rel, ok
}

// seedTmp copies the outputs at /tmp or below it into a run's fresh /tmp.
func (st *workerState) seedTmp(tmp *memFS) error {
	for _, o := range st.outputs {
		if rel, ok := inTmp(o.path); ok {
			if err := tmp.seed(rel, o.fs); err != nil {
				return fmt.Errorf("output %s into /tmp: %w", o.path, err)
			}
		}
	}
	return nil
}

// touched is the first omitted path a run reached: in the workspace, an output, or what
// /tmp got from an output.
func (st *workerState) touched(tmp *memFS) string {
	if t := st.workspace.Touched(); t != "" {
		return t
	}
	for _, o := range st.outputs {
		if t := o.fs.Touched(); t != "" {
			return t
		}
	}
	return tmp.Touched()
}

// seed copies the view from below at (a relative path of m, "" for its root), files'
// bytes included (the guest may write them here), with what the view left out: omitted
// entries and incomplete listings stay so.
func (m *memFS) seed(at string, from *memFS) error {
	from.mu.Lock()
	defer from.mu.Unlock()
	if at != "" {
		if err := m.put(at, fs.ModeDir|0o755, nil, ""); err != nil {
			return err
		}
	}
	if from.root.omitted != "" {
		if err := m.markIncomplete(at, from.root.omitted); err != nil {
			return err
		}
	}
	var walk func(dir *node, rel string) error
	walk = func(dir *node, rel string) error {
		for name, n := range dir.children {
			p := path.Join(at, rel, name)
			var err error
			switch {
			case n.isDir():
				err = m.put(p, n.mode, nil, "")
				if err == nil && n.omitted != "" {
					err = m.markIncomplete(p, n.omitted)
				}
				if err == nil {
					err = walk(n, path.Join(rel, name))
				}
			case n.omitted != "":
				err = m.putOmitted(p, n.mode, n.size, n.omitted)
			case n.isSymlink():
				err = m.put(p, n.mode, nil, n.target)
			default:
				err = m.put(p, n.mode, append([]byte(nil), n.data...), "")
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	return walk(from.root, "")
}
