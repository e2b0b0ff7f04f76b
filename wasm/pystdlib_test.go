package wasm

import (
	"testing"
)

func TestPythonImportsItsStdlibFromTheMountedDirectory(t *testing.T) {
	e := pyExecutor(t, Options{})
	s := workspace(t, map[string]string{"a.txt": "x"}, nil)
	for _, tc := range []struct{ name, script, stdout string }{
		{"default flags", `python3 -c 'import json, sys; print(json.__file__, sys.exec_prefix)'`, "/usr/local/lib/python3.12/json/__init__.pyc /usr/local\n"},
		{"isolated without site", `python3 -I -S -c 'import json; print(json.__file__)'`, "/usr/local/lib/python3.12/json/__init__.pyc\n"},
		{"read-only", `python3 -c '
try:
    open("/usr/local/lib/python3.12/json/evil.py", "w")
except OSError as e:
    print("refused")'`, "refused\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, score, details := runScript(t, e, command(tc.script), s, nil)
			if score != 1 || string(r.Stdout) != tc.stdout || len(r.Stderr) != 0 {
				t.Errorf("score %v, stdout %q, want %q; stderr %q; details %s", score, r.Stdout, tc.stdout, r.Stderr, details)
			}
		})
	}
}

// ceval's own sitecustomize, which every python3 of a run_command imports, is compiled once
// (kept in the worker's cache, like pytest's bytecode), not on every start (11 ms each), and
// imported without its source (sourcelessSite).
func TestPythonImportsCevalsSitecustomizeFromBytecode(t *testing.T) {
	e := pyExecutor(t, Options{})
	s := workspace(t, map[string]string{"a.txt": "x"}, nil)
	r, score, details := runScript(t, e, command(`python3 -v -c pass 2>&1 | grep "code object from '/ceval/python"`), s, nil)
	if want := "# code object from '/ceval/python/sitecustomize.pyc'\n"; score != 1 || string(r.Stdout) != want {
		t.Errorf("score %v, stdout %q, want %q; details %s", score, r.Stdout, want, details)
	}
}
