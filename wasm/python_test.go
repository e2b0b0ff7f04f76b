package wasm

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/wasmdata"
	"ceval.dev/ceval/task"

	"ceval.dev/ceval/wasm/wire"
)

var (
	pythonOnce sync.Once
	pythonPath string
	pythonErr  error
)

// testPython is the pinned CPython source, fetched once into ceval's download cache. Tests
// that need it fail under CI=true when it cannot be had, and skip elsewhere.
func testPython(t testing.TB) PythonSource {
	t.Helper()
	if !HasToolbox() {
		t.Skip("python runs through the toolbox, which this build lacks")
	}
	pythonOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		pythonPath, pythonErr = images.PythonWASM(ctx, false, nil)
	})
	if pythonErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("pinned CPython: %v", pythonErr)
		}
		t.Skipf("pinned CPython: %v", pythonErr)
	}
	return func(context.Context) (string, string, error) {
		return pythonPath, images.PythonWASI.File.SHA256, nil
	}
}

// pyExecutor is one Executor with CPython for a test and its subtests.
func pyExecutor(t *testing.T, opts Options) *Executor {
	opts.Python = testPython(t)
	return newExecutor(t, defaultToolbox(), opts)
}

func TestPythonRunsInRunCommand(t *testing.T) {
	e := pyExecutor(t, Options{})
	s := workspace(t, map[string]string{
		"out.json":        `{"answer": 42, "items": [1, 2, 3]}`,
		"data.txt":        "3\n4\n5\n",
		"solution.py":     "def add(a, b):\n    return a + b\n",
		"checks/check.py": "import json, sys\nd = json.load(open('out.json'))\nprint('ok' if d['answer'] == 42 else 'bad', sys.argv[1:])\nsys.exit(0 if d['answer'] == 42 else 1)\n",
	}, nil)
	for _, tc := range []struct{ name, script, stdout string }{
		{"dash c", `python3 -c 'import json; print(json.dumps({"a": 1}))'`, "{\"a\": 1}\n"},
		{"python alias", `python -c 'print(2 + 3)'`, "5\n"},
		{"heredoc on stdin", "python3 - <<'EOF'\nimport sys\nprint(6 * 7, sys.argv)\nEOF", "42 ['-']\n"},
		{"checker script reading the snapshot", `python3 checks/check.py x y && echo passed`, "ok ['x', 'y']\npassed\n"},
		{"checker script after cd", `cd checks && python3 check.py 2>&1 | grep -c FileNotFoundError`, "1\n"},
		{"relative PYTHONPATH", `mkdir -p /tmp/src/pkg && echo 'X = 7' > /tmp/src/pkg/__init__.py && cd /tmp && PYTHONPATH=src python3 -c 'import pkg; print(pkg.X)'`, "7\n"},
		{"working directory under -I and -E", `cd checks && python3 -I -c 'import os; print(os.getcwd())' && python3 -E -c 'import os; print(os.getcwd())' && python3 -IE check.py 2>&1 | grep -c FileNotFoundError`, "/workspace/checks\n/workspace/checks\n1\n"},
		{"pipeline python to toolbox", `python3 -c 'print("ok 1"); print("bad 2"); print("ok 3")' | grep ok | wc -l`, "2\n"},
		{"pipeline toolbox to python", `cat data.txt | python3 -c 'import sys; print(sum(int(l) for l in sys.stdin))'`, "12\n"},
		{"python to python", `python3 -c 'print(21)' | python3 -c 'print(int(input()) * 2)'`, "42\n"},
		{"agent module imported", `python3 -c 'import solution; print(solution.add(2, 3))'`, "5\n"},
		{"exit status", `python3 -c 'import sys; sys.exit(3)'; echo $?`, "3\n"},
		{"shares tmp with the toolbox", `python3 -c 'open("/tmp/x", "w").write("hi\n")' && cat /tmp/x && echo again > /tmp/y && python3 -c 'print(open("/tmp/y").read().strip())'`, "hi\nagain\n"},
		{"redirection to a file", `python3 -c 'print("to file")' > /tmp/o; cat /tmp/o`, "to file\n"},
		{"environment as the shell exported it", `export PYTHONHOME=/workspace; FOO=bar python3 -c 'import os, sys; print(sorted(k for k in os.environ if k.startswith(("PYTHON", "CEVAL", "FOO"))), sys.prefix, sys.path[2:])'`, "['FOO', 'PYTHONDONTWRITEBYTECODE', 'PYTHONPATH'] /usr/local ['/usr/local/lib/python3.12', '/usr/local/lib/python312.zip', '/usr/local/lib/python3.12/lib-dynload', '/usr/local/lib/python3.12/site-packages']\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, score, details := runScript(t, e, command(tc.script), s, nil)
			if string(r.Stdout) != tc.stdout || score != 1 {
				t.Errorf("score %v, stdout %q, want %q; details %s; stderr %s", score, r.Stdout, tc.stdout, details, r.Stderr)
			}
		})
	}
}

// TestPythonHostileScriptsAreDeniedOrBounded repeats the WASM attacks through Python: each
// is denied or stopped by a limit, and no host file is ever read.
func TestPythonHostileScriptsAreDeniedOrBounded(t *testing.T) {
	cn := hostCanary(t)
	e := pyExecutor(t, Options{MemoryLimit: 128 << 20, MaxOutput: 64 << 10})
	s := workspace(t, map[string]string{"passwd": "->/etc/passwd", "canary": "->" + cn.path}, nil)
	for _, tc := range []struct {
		name, script, limit, stdout string
	}{
		{"open etc passwd", `python3 -c 'print(open("/etc/passwd").read())'`, "", ""},
		{"open the canary by its host path", `python3 -c 'print(open("` + cn.path + `").read())'`, "", ""},
		{"list the root", `python3 -c 'import os; print(sorted(os.listdir("/")))'`, "", "['ceval', 'tmp', 'usr', 'workspace']\n"},
		{"follow a symlink to the host", `python3 -c 'print(open("passwd").read())'; python3 -c 'print(open("/workspace/canary").read())'`, "", ""},
		{"walk up with dot dot", `python3 -c 'print(open("/workspace/../../../etc/passwd").read())'`, "", ""},
		{"socket", `python3 -c 'import socket; s = socket.socket(); s.connect(("127.0.0.1", 22)); print("connected")'`, "", ""},
		{"subprocess", `python3 -c 'import subprocess; print(subprocess.run(["cat", "/etc/passwd"]))'`, "", ""},
		{"infinite loop", `python3 -c 'while True: pass'`, wire.LimitTimeout, ""},
		{"memory bomb", `python3 -c 'x = []
while True: x.append(bytearray(16 << 20))'`, wire.LimitMemory, ""},
		{"stdout flood", `python3 -c 'while True: print("x" * 1000)'`, wire.LimitStdout, ""},
		{"stdout flood into a pipe", `python3 -c 'while True: print("x" * 1000)' | head -1`, wire.LimitStdout, ""},
		{"stderr flood", `python3 -c 'import sys
while True: sys.stderr.write("y" * 1000)'`, wire.LimitStderr, ""},
		{"write the workspace", `python3 -c 'open("/workspace/new.txt", "w").write("x")'; test -e new.txt && echo written`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := command(tc.script)
			c.Execution().Timeout = 3 * time.Second
			if tc.limit != wire.LimitTimeout {
				c.Execution().Timeout = 30 * time.Second // only the loop should meet it, even on a loaded machine
			}
			r, score, details := runScript(t, e, c, s, nil)
			cn.assertAbsent(t, tc.script, r.Stdout, r.Stderr, []byte(details))
			if r.Limit != tc.limit {
				t.Errorf("limit %q, want %q (details %s; stderr %.300s)", r.Limit, tc.limit, details, r.Stderr)
			}
			if tc.limit != "" && score != 0 {
				t.Errorf("score %v past the %s limit", score, tc.limit)
			}
			if tc.limit == "" && string(r.Stdout) != tc.stdout {
				t.Errorf("stdout %q, want %q (stderr %.300s)", r.Stdout, tc.stdout, r.Stderr)
			}
			if tc.limit == wire.LimitMemory && r.PeakMemory > 128<<20 {
				t.Errorf("peak memory %d over the limit", r.PeakMemory)
			}
		})
	}
}

func TestPythonWorkspaceSitecustomizeIsNotRun(t *testing.T) {
	e := pyExecutor(t, Options{})
	s := workspace(t, map[string]string{
		"sitecustomize.py": "print('PWNED')\n",
		"usercustomize.py": "print('PWNED')\n",
		"json.py":          "print('PWNED shadow')\n",
		"check.py":         "print('check')\n",
	}, nil)
	r, _, _ := runScript(t, e, command(`python3 -c 'print(1)'; python3 check.py; python3 -I -c 'import json; print(json.dumps(2))'`), s, nil)
	if bytes.Contains(r.Stdout, []byte("PWNED")) || string(r.Stdout) != "1\ncheck\n2\n" {
		t.Errorf("stdout %q (stderr %s)", r.Stdout, r.Stderr)
	}
}

func TestPythonWithoutSourceSaysWhy(t *testing.T) {
	if !HasToolbox() {
		t.Skip("no toolbox")
	}
	e := newExecutor(t, defaultToolbox(), Options{})
	s := workspace(t, map[string]string{}, nil)
	r, score, _ := runScript(t, e, command(`python3 -c 'print(1)'`), s, nil)
	if score != 0 || r.ExitCode != 127 || !strings.Contains(string(r.Stderr), "Python is not available") {
		t.Errorf("score %v exit %d stderr %q", score, r.ExitCode, r.Stderr)
	}
}

func TestStripDebugKeepsEverythingButDWARF(t *testing.T) {
	// magic, version; a type section; custom ".debug_info"; custom "producers".
	mod := []byte("\x00asm\x01\x00\x00\x00")
	typ := []byte{1, 4, 1, 0x60, 0, 0}
	dbg := append([]byte{0, 13, 11}, ".debug_infoX"[:11]...)
	dbg = append(dbg, 'X')
	prod := append([]byte{0, 10, 9}, "producers"...)
	in := append(append(append(append([]byte{}, mod...), typ...), dbg...), prod...)
	got, err := stripDebug(in)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte{}, mod...), typ...), prod...)
	if !bytes.Equal(got, want) {
		t.Errorf("stripDebug = %x, want %x", got, want)
	}
	if _, err := stripDebug(append(append([]byte{}, mod...), 1, 200, 1)); err == nil {
		t.Error("a truncated section was accepted")
	}
}

// TestPreparedPythonHasThePinnedMemoryImage checks that preparing the pinned module for the
// sandbox (its data segments merged) leaves its initial memory byte for byte as it was.
func TestPreparedPythonHasThePinnedMemoryImage(t *testing.T) {
	const maxImage = 64 << 20 // the worker's bound on the stdlib's image (maxStdlibImage)
	path, _, err := testPython(t)(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	prepared, err := preparePythonModule(pinned)
	if err != nil {
		t.Fatal(err)
	}
	want, err := wasmdata.InitialMemory(pinned, maxImage)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wasmdata.InitialMemory(prepared, maxImage)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the prepared module's initial memory (%d bytes) differs from the pinned module's (%d bytes)", len(got), len(want))
	}
	if len(prepared) >= len(pinned) {
		t.Errorf("prepared module %d bytes, pinned %d: DWARF was not stripped", len(prepared), len(pinned))
	}
	if sum := sha256.Sum256(prepared); hex.EncodeToString(sum[:]) != pythonSandboxSHA256 {
		t.Errorf("the prepared module has sha256 %x, want pythonSandboxSHA256 %s", sum, pythonSandboxSHA256)
	}
}

func TestPythonPackagesAreImportableOnlyWhenDeclared(t *testing.T) {
	if _, err := os.Stat(DebianDistPackages + "/six.py"); err != nil {
		t.Skip("Debian's python3-six is not installed")
	}
	e := pyExecutor(t, Options{})
	s := workspace(t, map[string]string{}, nil)
	c := command(`python3 -c 'import six, iniconfig; print(six.PY3, iniconfig.__name__)'`)
	c.Execution().PythonPackages = []string{"six", "iniconfig"}
	if r, score, details := runScript(t, e, c, s, nil); score != 1 || string(r.Stdout) != "True iniconfig\n" {
		t.Errorf("declared: score %v stdout %q (%s; stderr %s)", score, r.Stdout, details, r.Stderr)
	}
	r, score, _ := runScript(t, e, command(`python3 -c 'import six'`), s, nil)
	if score != 0 || !strings.Contains(string(r.Stderr), "No module named 'six'") {
		t.Errorf("undeclared: score %v stderr %q", score, r.Stderr)
	}
}

// testWheel unpacks a pure-Python wheel holding wheelmod (X = 7) the way the task loader does.
func testWheel(t *testing.T) *task.Wheel {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, data := range map[string]string{
		"wheelmod/__init__.py":            "X = 7\n",
		"wheelmod/sub/deep.py":            "Z = 'deep'\n",
		"wheelmod-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: wheelmod\nVersion: 1.0\n",
		"wheelmod-1.0.dist-info/WHEEL":    "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	} {
		w, _ := zw.Create(name)
		w.Write([]byte(data))
	}
	zw.Close()
	wh, err := task.UnpackWheel("wheelmod-1.0-py3-none-any.whl", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	wh.SHA256 = "test-wheelmod"
	return wh
}

func TestPythonWheelsAreImportableOnlyWhenDeclared(t *testing.T) {
	e := pyExecutor(t, Options{})
	s := workspace(t, map[string]string{}, nil)
	c := command(`python3 -c 'import wheelmod, wheelmod.sub.deep, importlib.metadata as m; print(wheelmod.X, wheelmod.sub.deep.Z, m.version("wheelmod"))'`)
	c.Execution().PythonWheels = []*task.Wheel{testWheel(t)}
	if r, score, details := runScript(t, e, c, s, nil); score != 1 || string(r.Stdout) != "7 deep 1.0\n" {
		t.Errorf("declared: score %v stdout %q (%s; stderr %s)", score, r.Stdout, details, r.Stderr)
	}
	r, score, _ := runScript(t, e, command(`python3 -c 'import wheelmod'`), s, nil)
	if score != 0 || !strings.Contains(string(r.Stderr), "No module named 'wheelmod'") {
		t.Errorf("undeclared: score %v stderr %q", score, r.Stderr)
	}
}

func TestExecutorNamesThePinnedPythonItRan(t *testing.T) {
	e := pyExecutor(t, Options{})
	s := workspace(t, map[string]string{}, nil)
	c := command(`python3 -c pass`)
	if _, score, details := runScript(t, e, c, s, nil); score != 1 {
		t.Fatalf("score %v (%s)", score, details)
	}
	if p := e.Python(c); p == nil || p.SHA256 != pythonSandboxSHA256 || !strings.Contains(p.Name, "3.12.0") {
		t.Errorf("Python(python3 -c pass) = %+v, want the pinned module's digest %s", p, pythonSandboxSHA256)
	}
	if p := e.Python(command("echo hi")); p != nil {
		t.Errorf("Python(echo hi) = %+v, want nil", p)
	}
}

// TestForgedBytecodeCannotReplaceCevalsSitecustomize: with a pycache prefix in the writable
// /tmp, CPython looked there for the bytecode of ceval's sitecustomize, and the agent's code,
// run earlier in the same script, could leave one there (matching the source's time and
// size) that ran instead of it: no stdlib guard, a workspace json.py answering for json
// (found by review). ceval's sitecustomize is sourceless now and the prefix is dropped.
func TestForgedBytecodeCannotReplaceCevalsSitecustomize(t *testing.T) {
	forge := `import os, importlib._bootstrap_external as be
src = "/ceval/python/sitecustomize.py"
try:
    st = os.stat(src)
    mtime, size = int(st.st_mtime), st.st_size
except OSError:
    mtime, size = 946684800, 1066
code = compile("print('FORGED')", src, "exec")
for d in ("/tmp/pc/ceval/python", "/tmp/pc2/ceval/python"):
    os.makedirs(d, exist_ok=True)
    with open(d + "/sitecustomize.cpython-312.pyc", "wb") as f:
        f.write(be._code_to_timestamp_pyc(code, mtime, size))
`
	e := pyExecutor(t, Options{})
	s := workspace(t, map[string]string{"forge.py": forge, "json.py": "__file__ = 'FORGED json'\n"}, nil)
	script := `python3 forge.py && PYTHONPYCACHEPREFIX=/tmp/pc python3 -c 'import sys; sys.path.insert(0, ""); import json; print(json.__file__)' && python3 -E -X pycache_prefix=/tmp/pc2 -c 'import sys; sys.path.insert(0, ""); import json; print(json.__file__)'`
	r, _, details := runScript(t, e, command(script), s, nil)
	want := "/usr/local/lib/python3.12/json/__init__.pyc\n/usr/local/lib/python3.12/json/__init__.pyc\n"
	if string(r.Stdout) != want {
		t.Errorf("stdout %q, want %q (stderr %.300s; details %s)", r.Stdout, want, r.Stderr, details)
	}
}
