package wasm

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

// python_packages: Debian pure-Python packages (checked at task load: installed in
// DebianDistPackages, no native code) streamed from there as the pkgs view and mounted
// read-only at /ceval/packages, on sys.path after ceval's own directory.

const pythonPackagesDir = "/ceval/packages"

// sendPackagesView streams the named packages (NAME/ or NAME.py in dir) as the pkgs view,
// following no link out of dir.
func sendPackagesView(w io.Writer, dir string, names []string, maxBytes int64) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("python_packages: %w", err)
	}
	defer root.Close()
	if err := writeJSON(w, opViewBegin, viewBegin{Slot: slotPkgs}); err != nil {
		return err
	}
	r := referenceWalk{root: root, w: w, maxBytes: maxBytes}
	for _, name := range names {
		if fi, err := root.Lstat(name); err == nil && fi.IsDir() {
			if err := writeFrame(w, opDir, []byte(name)); err != nil {
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
	return writeFrame(w, opViewEnd)
}

// preparePackages loads the criterion's python_packages (unless the worker holds them).
func (e *Executor) preparePackages(ctx context.Context, names []string, req *runRequest) error {
	if len(names) == 0 {
		return nil
	}
	req.Packages = true
	k := strings.Join(names, ",")
	if e.w.pkgs == k {
		return nil
	}
	send := func(w io.Writer) error { return sendPackagesView(w, DebianDistPackages, names, e.opts.MaxViewBytes) }
	if err := e.loadView(ctx, "python_packages", send); err != nil {
		return err
	}
	e.w.pkgs = k
	return nil
}
