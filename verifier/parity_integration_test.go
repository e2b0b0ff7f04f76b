package verifier

import (
	"math"
	"testing"

	"ceval.dev/ceval/task"
	"ceval.dev/ceval/wasm"
)

// The same check, expressible in both tiers, scores the same in both. Rows that need a
// toolchain image (node -e, go test of a small module, pytest from a package image) are for
// when package images are on this branch: the default image has busybox only.
func TestVerifierAndWASMScoreTheSameChecksAlike(t *testing.T) {
	e, _, ctx := newExecutor(t)
	w, err := wasm.NewExecutor(wasm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := snap(t, map[string]string{"answer.txt": "42\n", "notes.md": "TODO: tidy\n", "a.txt": "x\n", "b.txt": "y\n"})
	str := func(s string) *string { return &s }
	rows := []struct {
		name, command string
		stdout        *string
		match         string
		fromStdout    bool
		exitCode      int
	}{
		{name: "file exists", command: "test -f answer.txt"},
		{name: "file missing", command: "test -f missing.txt"},
		{name: "grep finds", command: "grep -q 42 answer.txt"},
		{name: "negated grep", command: "! grep -rq TODO ."},
		{name: "exact stdout", command: "cat answer.txt", stdout: str("42")},
		{name: "wrong stdout", command: "cat a.txt", stdout: str("42")},
		{name: "contains", command: "cat notes.md answer.txt", stdout: str("tidy"), match: "contains"},
		{name: "regex", command: "cat answer.txt", stdout: str(`(?m)^\d+$`), match: "regex"},
		{name: "score from stdout", command: "echo 0.25", fromStdout: true},
		{name: "expected exit code", command: "exit 3", exitCode: 3},
		{name: "diff differs", command: "diff a.txt b.txt"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			c := container(r.command)
			c.StdoutScoring().ExpectedStdout, c.StdoutScoring().StdoutMatch, c.StdoutScoring().ScoreFromStdout, c.StdoutScoring().ExpectedExitCode = r.stdout, r.match, r.fromStdout, r.exitCode
			inContainer, cd, err := scoreParts(e.Execute(ctx, c, s, nil))
			if err != nil {
				t.Fatal(err)
			}
			ws := *c.Spec.(*task.RunCommandSpec) // a copy: c keeps its verifier
			ws.Verifier = nil
			wc := *c
			wc.Spec = &ws
			inWASM, wd, err := scoreParts(w.Execute(ctx, &wc, s, nil))
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(inContainer-inWASM) > 1e-9 {
				t.Errorf("container %v (%s), WASM %v (%s)", inContainer, cd, inWASM, wd)
			}
			t.Logf("| %-18s | %-28s | container %.2f | wasm %.2f |", r.name, r.command, inContainer, inWASM)
		})
	}
}
