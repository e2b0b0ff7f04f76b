package record_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestReadersImportNoContainerd: the run record and report, which only read result files,
// must not pull in containerd's client (and through it gRPC) by importing supervisor.
func TestReadersImportNoContainerd(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "ceval.dev/ceval/record", "ceval.dev/ceval/report", "ceval.dev/ceval/policy").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "containerd") || dep == "ceval.dev/ceval/supervisor" {
			t.Errorf("record/report/policy depend on %s: move what they need into record", dep)
		}
	}
}
