package wasm

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"ceval.dev/ceval/task"

	"ceval.dev/ceval/wasm/wire"
)

// python_packages: Debian pure-Python packages (checked at task load: installed in
// DebianDistPackages, no native code) streamed from there as the pkgs view and mounted
// read-only at /ceval/packages, on sys.path after ceval's own directory. python_wheels
// join them there: the files task.UnpackWheel took from each pinned archive at load
// (checked then: pure Python, no path out, no link, bounded), never the archive itself.

// sendPackagesView streams the named packages (NAME/ or NAME.py in dir) and the wheels'
// files as the pkgs view, following no link out of dir.
func sendPackagesView(w io.Writer, dir string, names []string, wheels []*task.Wheel, maxBytes int64) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("python_packages: %w", err)
	}
	defer root.Close()
	if err := wire.WriteJSON(w, wire.OpViewBegin, wire.ViewBegin{Slot: wire.SlotPkgs}); err != nil {
		return err
	}
	r := referenceWalk{root: root, w: w, maxBytes: maxBytes}
	for _, name := range names {
		if fi, err := root.Lstat(name); err == nil && fi.IsDir() {
			if err := wire.WriteFrame(w, wire.OpDir, []byte(name)); err != nil {
				return err
			}
			if err := r.walk(name); err != nil {
				return fmt.Errorf("python_packages %s: %w", name, err)
			}
			continue
		}
		data, mode, err := r.readFile(name + ".py")
		if err != nil {
			return fmt.Errorf("python_packages %s: %w", name, err)
		}
		if err := writeFile(w, name+".py", mode, data); err != nil {
			return err
		}
	}
	if err := sendWheels(w, wheels, maxBytes-r.bytes); err != nil {
		return err
	}
	return wire.WriteFrame(w, wire.OpViewEnd)
}

// sendWheels streams the wheels' unpacked files, each directory once before what it holds.
func sendWheels(w io.Writer, wheels []*task.Wheel, maxBytes int64) error {
	dirs := map[string]bool{}
	var total int64
	for _, wh := range wheels {
		for _, f := range wh.Files {
			if total += int64(len(f.Data)); total > maxBytes {
				return fmt.Errorf("python_wheels: the packages hold over %s, more than the sandbox takes", human(maxBytes))
			}
			var parents []string
			for d := path.Dir(f.Name); d != "." && d != "/" && !dirs[d]; d = path.Dir(d) {
				parents = append(parents, d)
			}
			for i := len(parents) - 1; i >= 0; i-- {
				dirs[parents[i]] = true
				if err := wire.WriteFrame(w, wire.OpDir, []byte(parents[i])); err != nil {
					return err
				}
			}
			if err := writeFile(w, f.Name, 0o444, f.Data); err != nil {
				return err
			}
		}
	}
	return nil
}

// preparePackages loads the criterion's python_packages and python_wheels (unless the
// worker holds them).
func (e *Executor) preparePackages(ctx context.Context, c *task.Execution, req *wire.RunRequest) error {
	names, wheels := c.PythonPackages, c.PythonWheels
	if len(names) == 0 && len(wheels) == 0 {
		return nil
	}
	req.Packages = true
	k := strings.Join(names, ",")
	for _, wh := range wheels {
		k += ",wheel:" + wh.SHA256
	}
	if e.w.pkgs == k {
		return nil
	}
	send := func(w io.Writer) error {
		return sendPackagesView(w, DebianDistPackages, names, wheels, e.opts.MaxViewBytes)
	}
	if err := e.loadView(ctx, "python_packages", send); err != nil {
		return err
	}
	e.w.pkgs = k
	return nil
}
