package local

import (
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

// Kernels before 5.19 are refused with the release and the fix; later ones, and releases
// that cannot be read, pass.
func TestRootOverlayNeedsLinux519(t *testing.T) {
	for release, refused := range map[string]bool{
		"5.15.0-91-generic": true, "4.19.0-26-amd64": true, "5.18.19": true, "5.4": true,
		"5.19.0-1-amd64": false, "6.1.0-18-amd64": false, "6.18.44-fc-v1300": false, "10.0": false, "weird": false, "5.x": false,
	} {
		err := checkRootOverlayKernel(release)
		if (err != nil) != refused {
			t.Errorf("%s: %v, want refused %v", release, err, refused)
		}
		if err != nil && (!strings.Contains(err.Error(), "Linux "+release) || !strings.Contains(err.Error(), "5.19") || !strings.Contains(err.Error(), "rootless")) {
			t.Errorf("%s: %v: want the release, 5.19 and the fix", release, err)
		}
	}
}

// A task with a criterion the verifier's root runs is refused on such a kernel, naming the
// criterion; one whose container criteria all run unprivileged (harbor_reward), or with none,
// is not.
func TestCheckRootVerifierRefusesOnlyTasksThatNeedIt(t *testing.T) {
	if !RootVerifierSupported() {
		t.Skip("rootless: verifiers run unprivileged here")
	}
	old := kernelRelease
	kernelRelease = func() string { return "5.15.0-91-generic" }
	t.Cleanup(func() { kernelRelease = old })
	root := task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: "true", GraderTier: task.GraderTier{Verifier: &task.Verifier{}}}}
	harbor := task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: "true", HarborReward: true, GraderTier: task.GraderTier{Verifier: &task.Verifier{}}}}
	wasm := task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: "true"}}
	if err := CheckRootVerifier(&task.Task{Criteria: []task.Criterion{wasm, root}}); err == nil || !strings.Contains(err.Error(), "criterion 2 (run_command, sandbox: container)") || !strings.Contains(err.Error(), "5.15.0-91-generic") {
		t.Errorf("a task with a root verifier criterion: %v", err)
	}
	for _, crit := range [][]task.Criterion{{wasm}, {harbor, wasm}, nil} {
		if err := CheckRootVerifier(&task.Task{Criteria: crit}); err != nil {
			t.Errorf("criteria %+v: %v", crit, err)
		}
	}
	kernelRelease = func() string { return "5.19.0" }
	if err := CheckRootVerifier(&task.Task{Criteria: []task.Criterion{root}}); err != nil {
		t.Errorf("5.19: %v", err)
	}
}
