package task

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
)

// PythonPackagesDir is where Debian's python3-* packages install pure-Python modules:
// python_packages resolve there (apt pins and checks what it installed).
var PythonPackagesDir = "/usr/lib/python3/dist-packages"

var pythonModuleName = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// nativeSuffixes are files CPython for WASI cannot load.
var nativeSuffixes = []string{".so", ".pyd", ".dylib", ".dll"}

// pythonPackages reads python_packages: import names of Debian pure-Python packages, each
// installed in PythonPackagesDir (as NAME/ or NAME.py) with no native code.
func (l *loader) pythonPackages(n *yaml.Node, what string, dst *[]string) {
	l.list(n, what, func(i int, item *yaml.Node) {
		iw := what + "[" + strconv.Itoa(i) + "]"
		var name string
		l.str(item, iw, &name)
		if name == "" {
			return
		}
		if err := checkPythonPackage(name); err != nil {
			l.errorf(resolve(item), "%s: %v", iw, err)
			return
		}
		*dst = append(*dst, name)
	})
}

// checkPythonPackage says why name cannot be mounted for the sandbox's CPython, or nil.
func checkPythonPackage(name string) error {
	if !pythonModuleName.MatchString(name) {
		return fmt.Errorf("%q is not a Python module name", name)
	}
	dir := filepath.Join(PythonPackagesDir, name)
	fi, err := os.Lstat(dir)
	if err != nil {
		if _, perr := os.Lstat(dir + ".py"); perr == nil {
			return nil
		}
		return fmt.Errorf("%q is not installed in %s: install Debian's package for it (usually `apt-get install python3-%s`)", name, PythonPackagesDir, strings.ToLower(strings.ReplaceAll(name, "_", "-")))
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is neither a package directory nor a module", dir)
	}
	var native string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		for _, s := range nativeSuffixes {
			if strings.HasSuffix(d.Name(), s) || strings.Contains(d.Name(), s+".") {
				native = p
				return fs.SkipAll
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %v", dir, err)
	}
	if native != "" {
		return fmt.Errorf("package %q has native code (%s), which CPython for WASI cannot load; only pure-Python packages run in the sandbox", name, native)
	}
	return nil
}

// mergePackages is the criterion's python_packages plus the task's, without repeats.
func mergePackages(task, crit []string) []string {
	out := append([]string(nil), crit...)
	for _, p := range task {
		if !contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
