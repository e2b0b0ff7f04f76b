package importer

import (
	"strings"
	"testing"
)

// A bare pytest or python3 -m pytest call is routed through ceval_pytest (and the shim
// inserted); words that only name pytest are not.
func TestTBRewriteRoutesBarePytestCalls(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"pytest /tests/test_outputs.py -rA", "ceval_pytest pytest /tests/test_outputs.py -rA"},
		{"python3 -m pytest -q /tests", "ceval_pytest python3 -m pytest -q /tests"},
		{"cd /app && pytest /tests", "cd /app && ceval_pytest pytest /tests"},
		{"if pytest /tests; then", "if ceval_pytest pytest /tests; then"},
		{"pytest", "ceval_pytest pytest"},
	} {
		out, _, calls, _ := tbRewrite("#!/bin/bash\n" + tc.in + "\n")
		if len(calls) != 1 || !strings.Contains(out, "\n"+tc.want+"\n") || !strings.Contains(out, "\nceval_pytest() {") || !strings.Contains(out, "CEVAL_OFFLINE_PYTEST=") {
			t.Errorf("%q: calls %v, out:\n%s", tc.in, calls, out)
		}
	}
	for _, in := range []string{"echo pytest", "pip install pytest", "pytest-runner x", "# pytest /tests", "mypytest /tests", "python -m pytestx"} {
		if out, _, calls, _ := tbRewrite("#!/bin/bash\n" + in + "\n"); len(calls) != 0 || strings.Contains(out, "ceval_pytest") {
			t.Errorf("%q rewritten: %v\n%s", in, calls, out)
		}
	}
	// a uvx call keeps its own routing, and no ceval_pytest when no bare call
	if out, _, _, _ := tbRewrite("uvx pytest /tests\n"); strings.Contains(out, "ceval_pytest") {
		t.Errorf("uvx: %s", out)
	}
}
