package task

import (
	"strings"
	"testing"
	"time"
)

// The executing types each load into their own struct, with their defaults, and the
// Criterion's accessors read that struct's shared parts (never a copy); a criterion that
// executes nothing has none of them.
func TestExecutingCriteriaLoadIntoTheirOwnStruct(t *testing.T) {
	tk, err := parseCriteria(t,
		"{type: run_command, command: 'echo ok', expected_stdout: ok, sandbox: container, timeout: 5s}",
		"{type: wasm, module: m.wasm, sha256: '"+strings.Repeat("0", 64)+"', args: [a], score_from_stdout: true}",
		"{type: pytest, tests: tests, args: ['-x'], all_or_nothing: true}",
		"{type: file_exists, path: a.txt}")
	if err != nil {
		t.Fatal(err)
	}
	rc, ok := tk.Criteria[0].Spec.(*RunCommandSpec)
	if !ok || rc.Command != "echo ok" || rc.ExpectedStdout == nil || *rc.ExpectedStdout != "ok" || rc.StdoutMatch != "exact" || rc.Timeout != 5*time.Second || rc.Verifier == nil {
		t.Errorf("run_command: %#v", tk.Criteria[0].Spec)
	} else if c := &tk.Criteria[0]; c.Execution() != &rc.Execution || c.StdoutScoring() != &rc.StdoutScoring || c.GraderTier() != &rc.GraderTier || c.Verifier() != rc.Verifier || c.Tier() != TierContainer {
		t.Errorf("run_command: the accessors do not read its struct")
	}
	w, ok := tk.Criteria[1].Spec.(*WASMSpec)
	if !ok || w.Module == nil || len(w.Args) != 1 || !w.ScoreFromStdout || w.Timeout != DefaultCheckTimeout {
		t.Errorf("wasm: %#v", tk.Criteria[1].Spec)
	} else if c := &tk.Criteria[1]; c.Execution() != &w.Execution || c.StdoutScoring() != &w.StdoutScoring || c.GraderTier() != nil || c.Verifier() != nil || c.Services() != nil || c.Tier() != TierWASM {
		t.Errorf("wasm: accessors %p %p %p", c.Execution(), c.StdoutScoring(), c.GraderTier())
	}
	p, ok := tk.Criteria[2].Spec.(*PytestSpec)
	if !ok || p.Tests == nil || p.Tests.Rel != "tests" || len(p.Args) != 1 || !p.AllOrNothing || p.Timeout != DefaultCheckTimeout || len(p.GraderFiles) != 1 {
		t.Errorf("pytest: %#v", tk.Criteria[2].Spec)
	} else if c := &tk.Criteria[2]; c.Execution() != &p.Execution || c.StdoutScoring() != nil || c.GraderTier() != &p.GraderTier || c.Tier() != TierWASM {
		t.Errorf("pytest: the accessors do not read its struct")
	}
	if c := &tk.Criteria[3]; c.Executes() || c.Execution() != nil || c.StdoutScoring() != nil || c.GraderTier() != nil || c.Verifier() != nil || c.Services() != nil || c.Tier() != "" {
		t.Errorf("file_exists has a part of an executing criterion")
	}
}
