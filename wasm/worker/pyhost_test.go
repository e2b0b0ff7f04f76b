package worker

import (
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/wasm/wire"
)

func TestPythonArgvReadsOptionsAsCPythonDoes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"python3 x.py a", "python3 /w/d/x.py a"},
		{"python3 -I sub/x.py", "python3 -I /w/d/sub/x.py"},
		{"python3 -Ximporttime sub/x.py", "python3 -Ximporttime /w/d/sub/x.py"},
		{"python3 -X importtime -Wmodule sub/x.py", "python3 -X importtime -Wmodule /w/d/sub/x.py"},
		{"python3 -W error x.py", "python3 -W error /w/d/x.py"},
		{"python3 --check-hash-based-pycs always x.py", "python3 --check-hash-based-pycs always /w/d/x.py"},
		{"python3 -c code x.py", "python3 -c code x.py"},
		{"python3 -Ic code x.py", "python3 -Ic code x.py"},
		{"python3 -m mod x.py", "python3 -m mod x.py"},
		{"python3 - x.py", "python3 - x.py"},
		{"python3 -- x.py", "python3 -- /w/d/x.py"},
		{"python3 /abs/x.py", "python3 /abs/x.py"},
		{"python3 -X pycache_prefix=/tmp/pc x.py", "python3 /w/d/x.py"},
		{"python3 -IXpycache_prefix=/tmp/pc -c code", "python3 -I -c code"},
		{"python3 -X pycache_prefix -c code", "python3 -c code"},
		{"python3 -S x.py", "python3 /w/d/x.py"},
		{"python3 -IS -c code", "python3 -I -c code"},
		{"python3 -ISc code", "python3 -Ic code"},
		{"python3 -Sc code", "python3 -c code"},
		{"python3 -SXpycache_prefix=/tmp/pc -m m", "python3 -m m"},
		{"python3 -SIX importtime -c code", "python3 -IX importtime -c code"},
		{"python3 -c -S", "python3 -c -S"},
	} {
		if got := strings.Join(pythonArgv(strings.Fields(tc.in), "/w/d"), " "); got != tc.want {
			t.Errorf("pythonArgv(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPythonEnvMakesPythonpathAbsolute(t *testing.T) {
	env := pythonEnv([]string{"PYTHONPATH=src::/abs:lib/x", "PYTHONPYCACHEPREFIX=/tmp/pc", "A=b"}, "/workspace", false)
	want := "PYTHONPATH=" + wire.PythonSiteDir + ":" + wire.PythonStdlibDir + "/" + pythonStdlibSubdir + ":/workspace/src:/workspace:/abs:/workspace/lib/x"
	if !slices.Contains(env, want) || slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PYTHONPYCACHEPREFIX=") }) || !slices.Contains(env, "A=b") {
		t.Errorf("pythonEnv = %q, want %q, no PYTHONPYCACHEPREFIX and A=b", env, want)
	}
}
