package task

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/policy"
)

func TestVerifierTier(t *testing.T) {
	dir := t.TempDir()
	head := "task_id: t\ninitial_prompt: p\nsandbox: {image: example.org/dotnet:8}\n"
	good := []struct {
		name, doc string
		want      *Verifier
		timeout   time.Duration
	}{
		{"WASM by default", "success_criteria: [{type: run_command, command: 'true'}]\n", nil, DefaultCheckTimeout},
		{"the task's own image by default",
			"success_criteria: [{type: run_command, command: 'dotnet build', sandbox: container}]\n",
			&Verifier{Image: "example.org/dotnet:8", Network: policy.NetworkNone, MemoryMB: DefaultVerifierMemoryMB, Pids: DefaultVerifierPids, DiskMB: policy.DefaultDiskMB}, DefaultCheckTimeout},
		{"the criterion's own image and limits",
			"success_criteria: [{type: run_command, command: x, sandbox: container, image: other:1, memory_mb: 512, pids: 64, timeout: 2m}]\n",
			&Verifier{Image: "other:1", Network: policy.NetworkNone, MemoryMB: 512, Pids: 64, DiskMB: policy.DefaultDiskMB}, 2 * time.Minute},
		{"the task's grader section is the default",
			"grader: {sandbox: container, image: g:1, pids: 100, timeout: 5m}\nsuccess_criteria: [{type: run_command, command: x}]\n",
			&Verifier{Image: "g:1", Network: policy.NetworkNone, MemoryMB: DefaultVerifierMemoryMB, Pids: 100, DiskMB: policy.DefaultDiskMB}, 5 * time.Minute},
		{"a criterion overrides the grader section",
			"grader: {sandbox: container, image: g:1, timeout: 5m}\nsuccess_criteria: [{type: run_command, command: x, image: mine:2, timeout: 10s}]\n",
			&Verifier{Image: "mine:2", Network: policy.NetworkNone, MemoryMB: DefaultVerifierMemoryMB, Pids: DefaultVerifierPids, DiskMB: policy.DefaultDiskMB}, 10 * time.Second},
		{"host network, if the user allows it",
			"grader: {sandbox: container, network: host}\nsuccess_criteria: [{type: run_command, command: x}]\n",
			&Verifier{Image: "example.org/dotnet:8", Network: policy.NetworkHost, MemoryMB: DefaultVerifierMemoryMB, Pids: DefaultVerifierPids, DiskMB: policy.DefaultDiskMB}, DefaultCheckTimeout},
		{"a criterion opts back into WASM",
			"grader: {sandbox: container}\nsuccess_criteria: [{type: run_command, command: x, sandbox: wasm}]\n", nil, DefaultCheckTimeout},
	}
	for _, c := range good {
		tk, err := Parse("task.yaml", dir, []byte(head+c.doc))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		cr := tk.Criteria[0]
		switch {
		case (cr.Verifier == nil) != (c.want == nil), cr.Verifier != nil && !reflect.DeepEqual(*cr.Verifier, *c.want):
			t.Errorf("%s: verifier %+v, want %+v", c.name, cr.Verifier, c.want)
		case cr.Timeout != c.timeout:
			t.Errorf("%s: timeout %v, want %v", c.name, cr.Timeout, c.timeout)
		}
		wantTier := TierWASM
		if c.want != nil {
			wantTier = TierContainer
		}
		if cr.Tier() != wantTier || tk.NeedsVerifier() != (c.want != nil) {
			t.Errorf("%s: tier %q, NeedsVerifier %v", c.name, cr.Tier(), tk.NeedsVerifier())
		}
	}

	bad := []struct{ name, doc, want string }{
		{"an image without sandbox: container", "success_criteria: [{type: run_command, command: x, image: i:1}]\n",
			"task.yaml:4:59: success_criteria[0] (run_command).image applies only to a verifier container: add sandbox: container"},
		{"network without a container", "success_criteria: [{type: run_command, command: x, network: host}]\n",
			"success_criteria[0] (run_command).network applies only to a verifier container"},
		{"an unknown tier", "success_criteria: [{type: run_command, command: x, sandbox: vm}]\n",
			"task.yaml:4:61: success_criteria[0] (run_command).sandbox must be one of"},
		{"a wasm module cannot take a container", "success_criteria: [{type: wasm, module: m.wasm, sha256: " + strings.Repeat("a", 64) + ", sandbox: container}]\n",
			"unknown field \"sandbox\""},
		{"a grader section with nothing to run", "grader: {sandbox: container}\nsuccess_criteria: [{type: file_exists, path: a}]\n",
			"task.yaml:4:19: grader.sandbox: container applies to run_command criteria, and the task has none"},
		{"too few pids", "success_criteria: [{type: run_command, command: x, sandbox: container, pids: 1}]\n",
			"success_criteria[0] (run_command).pids must be between 8 and"},
	}
	for _, c := range bad {
		_, err := Parse("task.yaml", dir, []byte(head+c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestImageOnlyProgramFindsTheFirstToolchainCalled(t *testing.T) {
	for cmd, want := range map[string]string{
		"cd app && CI=1 npm test":               "npm",
		"grep -q node README.md":                "",
		"test -f x; /usr/local/go/bin/go vet":   "go",
		"echo $(dotnet --version) | grep 8":     "dotnet",
		"python3 check.py && node_modules=1 ls": "",
	} {
		if got := ImageOnlyProgram(cmd); got != want {
			t.Errorf("%q: %q, want %q", cmd, got, want)
		}
	}
}

func TestGraderFilesReachEveryContainerCriterion(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "hidden"), 0o755); err != nil {
		t.Fatal(err)
	}
	doc := "task_id: t\ninitial_prompt: p\ngrader_files: [hidden]\nsuccess_criteria:\n" +
		"  - {type: run_command, command: x, sandbox: container}\n  - {type: run_command, command: y}\n"
	tk, err := Parse("task.yaml", dir, []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if len(tk.GraderFiles) != 1 || len(tk.Criteria[0].Verifier.GraderFiles) != 1 || tk.Criteria[0].Verifier.GraderFiles[0] != tk.GraderFiles[0] {
		t.Errorf("grader_files %v, criterion's %v", tk.GraderFiles, tk.Criteria[0].Verifier)
	}
	if _, err := Parse("task.yaml", dir, []byte(strings.Replace(doc, "hidden", "../etc", 1))); err == nil {
		t.Error("grader_files outside the task's directory was accepted")
	}
}
