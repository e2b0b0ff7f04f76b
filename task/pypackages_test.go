package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeDistPackages points PythonPackagesDir at a directory holding a pure package, a pure
// module and a package with native code.
func fakeDistPackages(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"purepkg/__init__.py":   "X = 1\n",
		"puremod.py":            "Y = 2\n",
		"nativepkg/__init__.py": "from ._speed import *\n",
		"nativepkg/_speed.cpython-311-x86_64-linux-gnu.so": "\x7fELF",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := PythonPackagesDir
	PythonPackagesDir = dir
	t.Cleanup(func() { PythonPackagesDir = old })
}

func TestPythonPackagesReachPythonCriteria(t *testing.T) {
	fakeDistPackages(t)
	doc := `task_id: t1
initial_prompt: do it
python_packages: [purepkg]
success_criteria:
  - {type: run_command, command: "python3 -c 'import purepkg, puremod'", python_packages: [puremod]}
  - {type: file_exists, path: a.txt}
`
	tk, err := Load(writeTask(t, doc, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tk.Criteria[0].Execution().PythonPackages, " "); got != "puremod purepkg" {
		t.Errorf("criterion packages %q, want puremod purepkg", got)
	}
	if e := tk.Criteria[1].Execution(); e != nil {
		t.Errorf("file_exists got packages %q", e.PythonPackages)
	}
}

func TestPythonPackageWithNativeCodeIsAnErrorNamingIt(t *testing.T) {
	fakeDistPackages(t)
	for _, tc := range []struct{ entry, want string }{
		{"nativepkg", `package "nativepkg" has native code`},
		{"missingpkg", `"missingpkg" is not installed`},
		{"../etc", "is not a Python module name"},
	} {
		doc := "task_id: t1\ninitial_prompt: do it\npython_packages: [" + tc.entry + "]\nsuccess_criteria:\n  - {type: file_exists, path: a.txt}\n"
		_, err := Load(writeTask(t, doc, nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "task.yaml:3:") {
			t.Errorf("%s: err = %v, want %q at task.yaml:3", tc.entry, err, tc.want)
		}
	}
}
