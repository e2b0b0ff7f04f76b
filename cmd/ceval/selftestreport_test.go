package main

import (
	"encoding/json"
	"testing"
)

// selftestJSON is `ceval selftest --json` as the tests read it: decoded into types of their
// own, not selftest's, so a renamed field of the CLI's output fails them.
type selftestJSON struct {
	Attacks []struct {
		Name    string  `json:"name"`
		Tried   string  `json:"tried"`
		Outcome string  `json:"outcome"`
		Score   float64 `json:"score"`
		Detail  string  `json:"detail"`
		RunDir  string  `json:"run_dir"`
	} `json:"attacks"`
}

// selftestReport decodes the JSON report a `ceval selftest --json` printed, or fails the test
// with what it printed.
func selftestReport(t *testing.T, r cliResult) selftestJSON {
	t.Helper()
	var rep selftestJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("exit %d: stdout is not the JSON report: %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	return rep
}
