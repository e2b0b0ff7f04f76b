package wasm

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// pythonModule is the stripped CPython module the tests run.
func pythonModule(t *testing.T) *taskModule {
	t.Helper()
	e := pyExecutor(t, Options{})
	m, err := e.python(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

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

// The stdlib mounted for CPython is the zip inside the pinned module, checked by its own
// sha256: a module whose embedded stdlib differs by one byte is refused.
func TestPythonStdlibThatDiffersFromItsPinIsRefused(t *testing.T) {
	m := pythonModule(t)
	if _, err := pythonStdlib(m.data); err != nil {
		t.Fatalf("the pinned module's stdlib: %v", err)
	}
	i := bytes.Index(m.data, []byte("encodings/__init__.pyc"))
	if i < 0 {
		t.Fatal("no stdlib entry name in the module")
	}
	tampered := bytes.Clone(m.data)
	tampered[i] = 'E'
	_, err := pythonStdlib(tampered)
	if err == nil || !strings.Contains(err.Error(), pythonStdlibZipSHA256) {
		t.Fatalf("tampered stdlib: err %v, want a refusal naming the pinned sha256", err)
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
