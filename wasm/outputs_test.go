package wasm

import (
	"testing"

	"ceval.dev/ceval/snapshot"
)

// A task's sandbox.outputs reach the WASM sandbox at their paths: /output read-only as the
// workspace is, /tmp's copy in the run's writable /tmp; a link the agent planted there stays
// an inert string; a file a cap left out is visible and unreadable, and reaching it decides
// the criterion.
func TestOutputsAreVisibleAtTheirPathsInTheSandbox(t *testing.T) {
	if !HasToolbox() {
		t.Skip("no toolbox embedded")
	}
	s := workspace(t, map[string]string{"ws.txt": "ws"}, nil)
	s.Outputs = []snapshot.Output{
		{Path: "/output", Snapshot: workspace(t, map[string]string{"x.txt": "answer 42", "sub/y.txt": "nested", "leak": "->/etc/passwd"}, nil)},
		{Path: "/tmp", Snapshot: workspace(t, map[string]string{"t.txt": "tmp answer"}, nil)},
		{Path: "/var/out", Snapshot: cappedWorkspace(t, map[string]string{"big.txt": "TODO 0123456789", "ok.txt": "ok"}, snapshot.Limits{MaxFileBytes: 4})},
	}
	e := newExecutor(t, defaultToolbox(), Options{})
	for script, want := range map[string]float64{
		"grep -q 'answer 42' /output/x.txt":               1,
		"grep -q nested /output/sub/y.txt":                1,
		"grep -q 'tmp answer' /tmp/t.txt":                 1,
		"echo more > /tmp/new && grep -q more /tmp/new":   1,
		"grep -q ws ws.txt && grep -q ok /var/out/ok.txt": 1,
		"test -L /output/leak":                            1,
		"grep -q root /output/leak":                       0, // never followed
		"echo x > /output/w":                              0, // read-only, as the workspace
		"test -e /var/out/big.txt":                        1, // visible: it exists
		"! grep -q TODO /var/out/big.txt":                 0, // omitted: reaching it fails the criterion
	} {
		if _, score, details := runScript(t, e, command(script), s, nil); score != want {
			t.Errorf("%q scored %v (%s), want %v", script, score, details, want)
		}
	}
	// A second snapshot without outputs drops the first one's.
	if _, score, details := runScript(t, e, command("test -e /output/x.txt || test -e /tmp/t.txt"), workspace(t, map[string]string{"a": "a"}, nil), nil); score != 0 {
		t.Errorf("the last snapshot's outputs stayed: scored %v (%s)", score, details)
	}
}
