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
		case (cr.Verifier() == nil) != (c.want == nil), cr.Verifier() != nil && !reflect.DeepEqual(*cr.Verifier(), *c.want):
			t.Errorf("%s: verifier %+v, want %+v", c.name, cr.Verifier(), c.want)
		case cr.Execution().Timeout != c.timeout:
			t.Errorf("%s: timeout %v, want %v", c.name, cr.Execution().Timeout, c.timeout)
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
			"task.yaml:4:19: grader.sandbox: container applies to run_command and pytest criteria, and the task has none"},
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
	if len(tk.GraderFiles) != 1 || len(tk.Criteria[0].Verifier().GraderFiles) != 1 || tk.Criteria[0].Verifier().GraderFiles[0] != tk.GraderFiles[0] {
		t.Errorf("grader_files %v, criterion's %v", tk.GraderFiles, tk.Criteria[0].Verifier())
	}
	if _, err := Parse("task.yaml", dir, []byte(strings.Replace(doc, "hidden", "../etc", 1))); err == nil {
		t.Error("grader_files outside the task's directory was accepted")
	}
}

func TestVerifierPackageImageFromPackagesAndPip(t *testing.T) {
	files := map[string]string{"tests/test_a.py": "def test_a(): pass\n", "wheels/six-1.16.0-py2.py3-none-any.whl": "x"}
	head := "task_id: t\ninitial_prompt: p\n"
	pkgImage := Sandbox{Packages: []string{"python3-pytest"}}.PackageImage()
	for _, tc := range []struct {
		name, doc string
		image     string
		packages  []string
		pip       bool
	}{
		{"pytest criterion with packages", "success_criteria:\n  - {type: pytest, tests: tests/, sandbox: container, packages: [python3-pytest]}\n", pkgImage, []string{"python3-pytest"}, false},
		{"grader packages are the default of pytest and run_command",
			"grader: {sandbox: container, packages: [python3-pytest]}\nsuccess_criteria:\n  - {type: pytest, tests: tests/}\n", pkgImage, []string{"python3-pytest"}, false},
		{"a criterion's image replaces the grader's packages",
			"grader: {sandbox: container, packages: [python3-pytest]}\nsuccess_criteria:\n  - {type: run_command, command: x, image: mine:1}\n", "mine:1", nil, false},
		{"pip with its wheels",
			"success_criteria:\n  - {type: run_command, command: x, sandbox: container, packages: [python3-pip], pip: ['six==1.16.0'], pip_find_links: wheels}\n", "", []string{"python3-pip"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk, err := Load(writeTask(t, head+tc.doc, files))
			if err != nil {
				t.Fatal(err)
			}
			v := tk.Criteria[0].Verifier()
			if v == nil {
				t.Fatal("no verifier")
			}
			if tc.image != "" && v.Image != tc.image || !strings.HasPrefix(v.Image, PackageImageRepo) && tc.packages != nil {
				t.Errorf("image %q, want %q", v.Image, tc.image)
			}
			if !reflect.DeepEqual(v.Packages, tc.packages) || (v.PipFindLinks != nil) != tc.pip {
				t.Errorf("packages %q pip %q links %v", v.Packages, v.Pip, v.PipFindLinks)
			}
			if tk.Criteria[0].Type == Pytest && len(v.GraderFiles) != 1 {
				t.Errorf("pytest verifier lacks its tests: %+v", v.GraderFiles)
			}
		})
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"image and packages", "success_criteria:\n  - {type: run_command, command: x, sandbox: container, image: i:1, packages: [git]}\n",
			"task.yaml:4:64: success_criteria[0] (run_command): give image or packages/pip, not both"},
		{"grader image and packages", "grader: {sandbox: container, image: i:1, packages: [git]}\nsuccess_criteria:\n  - {type: run_command, command: x}\n",
			"task.yaml:3:37: grader: give image or packages/pip, not both"},
		{"packages without a container", "success_criteria:\n  - {type: pytest, tests: tests/, packages: [git]}\n",
			"task.yaml:4:45: success_criteria[0] (pytest).packages applies only to a verifier container"},
		{"a bad package name", "success_criteria:\n  - {type: pytest, tests: tests/, sandbox: container, packages: [--hook]}\n",
			"task.yaml:4:66: success_criteria[0] (pytest).packages[0]: \"--hook\" is not a Debian package name"},
		{"pip without wheels", "success_criteria:\n  - {type: run_command, command: x, sandbox: container, pip: ['a==1']}\n",
			"(run_command).pip needs success_criteria[0] (run_command).pip_find_links"},
		{"python_packages in a container", "success_criteria:\n  - {type: pytest, tests: tests/, sandbox: container, python_packages: [six]}\n",
			"python_packages and python_wheels apply to the WASM sandbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.doc, "python_packages") {
				fakeDistPackages(t)
				tc.doc = strings.Replace(tc.doc, "[six]", "[purepkg]", 1)
			}
			_, err := Load(writeTask(t, head+tc.doc, files))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// The criteria whose verdict a process of their own writes (harbor_reward's shell, pytest's
// isolation: process) never get a root verifier: root's CAP_DAC_OVERRIDE reads the
// unreadable bash that keeps that process out of its tests' reach.
func TestUnforgeableVerdictsRunUnprivileged(t *testing.T) {
	for _, c := range []struct {
		c    Criterion
		want bool
	}{
		{Criterion{Type: RunCommand, Spec: &RunCommandSpec{HarborReward: true}}, true},
		{Criterion{Type: Pytest, Spec: &PytestSpec{Isolation: IsolationProcess}}, true},
		{Criterion{Type: Pytest, Spec: &PytestSpec{}}, false},
		{Criterion{Type: Pytest, Spec: &PytestSpec{Isolation: IsolationNone}}, false},
		{Criterion{Type: RunCommand}, false},
	} {
		if got := c.c.SharesNoPrivilegeWithItsTests(); got != c.want {
			t.Errorf("%+v: %v, want %v", c.c, got, c.want)
		}
	}
}
