package task

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/testtree"
	"ceval.dev/ceval/policy"
)

const taskA = `task_id: a
tags: [fast]
initial_prompt: do a
agent: {type: command, command: [/bin/true], model: task-model}
sandbox:
  limits: {timeout: 60s, memory_mb: 256}
success_criteria:
  - {type: file_exists, path: a.txt}
`

const taskB = `task_id: b
tags: [slow]
initial_prompt: do b
success_criteria:
  - {type: file_exists, path: b.txt}
`

func TestExperimentMergesDefaultsTaskVariantAndOverridesInThatOrder(t *testing.T) {
	dir := testtree.New(t, map[string]string{
		"tasks/a/task.yaml": taskA,
		"tasks/b/task.yaml": taskB,
		"shared/prompt.md":  "shared prompt",
		"exp.yaml": `experiment_id: e1
tasks: [tasks/*/task.yaml]
repeats: 3
parallel: 2
defaults:
  agent: {type: command, command: [/bin/false]}
  sandbox: {limits: {pids: 64, cpus: 1}}
variants:
  - variant_id: good
    agent: {type: command, command: [/bin/sh, -c, "echo good"], args: []}
  - variant_id: bad
    sandbox: {limits: {memory_mb: 128}}
`,
	})
	e, err := LoadExperiment(filepath.Join(dir, "exp.yaml"), ExperimentOptions{Overrides: []string{"sandbox.limits.cpus=0.5"}})
	if err != nil {
		t.Fatal(err)
	}
	if e.ID != "e1" || e.Repeats != 3 || e.Parallel != 2 || len(e.Entries) != 4 {
		t.Fatalf("experiment %+v", e)
	}
	got := map[string]*Task{}
	for _, en := range e.Entries {
		got[en.Variant+"/"+en.Task.ID] = en.Task
	}
	cases := []struct {
		key     string
		command string
		memory  int64
		pids    int64
		cpus    float64
		model   string
	}{
		// good's agent replaces the task's command (lists replace) but keeps its model (maps merge).
		{"good/a", "/bin/sh -c echo good", 256, 64, 0.5, "task-model"},
		{"good/b", "/bin/sh -c echo good", policy.DefaultMemoryMB, 64, 0.5, ""},
		// bad keeps each task's agent, falling back to the defaults' one.
		{"bad/a", "/bin/true", 128, 64, 0.5, "task-model"},
		{"bad/b", "/bin/false", 128, 64, 0.5, ""},
	}
	for _, c := range cases {
		tk := got[c.key]
		if tk == nil {
			t.Fatalf("%s missing", c.key)
		}
		if cmd := strings.Join(tk.Agent.Command, " "); cmd != c.command {
			t.Errorf("%s: command %q, want %q", c.key, cmd, c.command)
		}
		lim := tk.Sandbox.Limits
		if lim.MemoryMB != c.memory || lim.Pids != c.pids || lim.CPUs != c.cpus || tk.Agent.Model != c.model {
			t.Errorf("%s: limits %+v model %q, want memory %d pids %d cpus %g model %q", c.key, lim, tk.Agent.Model, c.memory, c.pids, c.cpus, c.model)
		}
		if tk.ExperimentDir != dir || tk.ConfigSHA256 == "" {
			t.Errorf("%s: experiment dir %q config %q", c.key, tk.ExperimentDir, tk.ConfigSHA256)
		}
	}
	if got["good/a"].ConfigSHA256 == got["bad/a"].ConfigSHA256 {
		t.Error("two different merged tasks share a config digest")
	}
	if e.Entries[0].Variant != "good" || e.Entries[3].Variant != "bad" {
		t.Errorf("entries not variant-major in file order: %v", e.Entries)
	}
}

func TestExperimentDefaultsPathsResolveInTheExperimentDirectory(t *testing.T) {
	dir := testtree.New(t, map[string]string{
		"tasks/a/task.yaml": strings.Replace(taskA, "initial_prompt: do a\n", "", 1),
		"shared/prompt.md":  "shared prompt",
		"shared/tpl/x.txt":  "x",
		"exp.yaml": `experiment_id: e
tasks: [tasks/a/task.yaml]
defaults:
  initial_prompt_file: shared/prompt.md
  sandbox: {workspace: {template_dir: shared/tpl}}
`,
	})
	e, err := LoadExperiment(filepath.Join(dir, "exp.yaml"), ExperimentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tk := e.Entries[0].Task
	if tk.Prompt != "shared prompt" || tk.Sandbox.Workspace.TemplateDir.Path != filepath.Join(dir, "shared/tpl") {
		t.Fatalf("prompt %q template %q", tk.Prompt, tk.Sandbox.Workspace.TemplateDir.Path)
	}
	d1, err := Digest(tk)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "shared/tpl/x.txt"), []byte("changed"), 0o644)
	if d2, _ := Digest(tk); d2 == d1 {
		t.Error("digest ignores the experiment's template directory")
	}
}

func TestExperimentDefaultsPathCannotLeaveTheExperimentDirectory(t *testing.T) {
	outside := testtree.New(t, map[string]string{"secret.txt": "s"})
	dir := testtree.New(t, map[string]string{
		"tasks/a/task.yaml": strings.Replace(taskA, "initial_prompt: do a\n", "", 1),
		"exp.yaml":          "experiment_id: e\ntasks: [tasks/a/task.yaml]\ndefaults:\n  initial_prompt_file: link.txt\n",
	})
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	_, err := LoadExperiment(filepath.Join(dir, "exp.yaml"), ExperimentOptions{})
	var ps Problems
	if !errors.As(err, &ps) || !strings.Contains(err.Error(), "exp.yaml:4:24: initial_prompt_file") || !strings.Contains(err.Error(), "leaves") {
		t.Fatalf("want a problem at the defaults' line, got %v", err)
	}
}

func TestExperimentProblemsPointAtTheFileThatCausedThem(t *testing.T) {
	cases := []struct {
		name      string
		exp       string
		overrides []string
		tags      []string
		want      []string
	}{
		{"unknown experiment field", "experiment_id: e\ntasks: [tasks/*/task.yaml]\ncolour: red\n", nil, nil,
			[]string{`exp.yaml:3:1: unknown field "colour" in experiment`}},
		{"missing id and tasks", "repeats: 2\n", nil, nil,
			[]string{"exp.yaml:1:1: missing required field experiment_id", "exp.yaml:1:1: missing required field tasks"}},
		{"bad variant field reported once at the variant", "experiment_id: e\ntasks: [tasks/*/task.yaml]\nvariants:\n  - variant_id: v\n    agnet: {}\n", nil, nil,
			[]string{`exp.yaml:5:5: unknown field "agnet" in task`}},
		{"duplicate variant id", "experiment_id: e\ntasks: [tasks/a/task.yaml]\nvariants:\n  - {variant_id: v}\n  - {variant_id: v}\n", nil, nil,
			[]string{`exp.yaml:5:18: variants[1].variant_id "v" is given twice`}},
		{"bad variant id", "experiment_id: e\ntasks: [tasks/a/task.yaml]\nvariants:\n  - {variant_id: V/1}\n", nil, nil,
			[]string{`exp.yaml:4:18: variants[0].variant_id "V/1" may hold only`}},
		{"defaults set task_id", "experiment_id: e\ntasks: [tasks/a/task.yaml]\ndefaults: {task_id: x}\n", nil, nil,
			[]string{"exp.yaml:3:12: defaults cannot set task_id"}},
		{"defaults wrong type", "experiment_id: e\ntasks: [tasks/a/task.yaml]\ndefaults:\n  sandbox: {limits: {pids: lots}}\n", nil, nil,
			[]string{`exp.yaml:4:28: sandbox.limits.pids must be a whole number, got "lots"`}},
		{"glob matches nothing", "experiment_id: e\ntasks: [nope/*.yaml]\n", nil, nil,
			[]string{`exp.yaml:2:9: tasks[0]: "nope/*.yaml" matches no file`}},
		{"absolute task path", "experiment_id: e\ntasks: [/etc/passwd]\n", nil, nil,
			[]string{`exp.yaml:2:9: tasks[0]: "/etc/passwd" is absolute`}},
		{"same task id twice in a variant", "experiment_id: e\ntasks: [tasks/a/task.yaml, tasks/dup/task.yaml]\n", nil, nil,
			[]string{`variant "default" runs task_id "a" twice`}},
		{"error in a task file keeps its own position", "experiment_id: e\ntasks: [tasks/bad/task.yaml]\n", nil, nil,
			[]string{`tasks/bad/task.yaml:2:1: unknown field "colour" in task`}},
		{"override to an unknown field", "experiment_id: e\ntasks: [tasks/a/task.yaml]\n", []string{"agent.modle=x"}, nil,
			[]string{`-D agent.modle=x: unknown field "modle" in agent`}},
		{"override without =", "experiment_id: e\ntasks: [tasks/a/task.yaml]\n", []string{"agent.model"}, nil,
			[]string{"-D agent.model: want -D path=value"}},
		{"override of the wrong type", "experiment_id: e\ntasks: [tasks/a/task.yaml]\n", []string{"sandbox.limits.memory_mb=[1]"}, nil,
			[]string{"-D sandbox.limits.memory_mb=[1]: sandbox.limits.memory_mb must be a scalar"}},
		{"tags filter keeps nothing", "experiment_id: e\ntasks: [tasks/a/task.yaml]\n", nil, []string{"nope"},
			[]string{"exp.yaml: no task has any of the tags nope"}},
		{"repeats zero", "experiment_id: e\ntasks: [tasks/a/task.yaml]\nrepeats: 0\n", nil, nil,
			[]string{"exp.yaml:3:10: repeats must be between 1 and 10000, got 0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := testtree.New(t, map[string]string{
				"tasks/a/task.yaml":   taskA,
				"tasks/dup/task.yaml": taskA,
				"tasks/bad/task.yaml": "task_id: bad\ncolour: red\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: x}]\n",
				"exp.yaml":            c.exp,
			})
			_, err := LoadExperiment(filepath.Join(dir, "exp.yaml"), ExperimentOptions{Overrides: c.overrides, Tags: c.tags})
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("want Problems, got %v", err)
			}
			for _, w := range c.want {
				n := strings.Count(err.Error(), w)
				if n != 1 {
					t.Errorf("%q appears %d times in:\n%v", w, n, err)
				}
			}
		})
	}
}

func TestExperimentTagsFilterAndOverrideValues(t *testing.T) {
	dir := testtree.New(t, map[string]string{
		"tasks/a/task.yaml": taskA,
		"tasks/b/task.yaml": taskB,
		"exp.yaml":          "experiment_id: e\ntasks: [tasks/*/task.yaml]\ntags: [fast]\ndefaults: {agent: {type: command, command: [/bin/true]}}\n",
	})
	p := filepath.Join(dir, "exp.yaml")
	e, err := LoadExperiment(p, ExperimentOptions{Overrides: []string{"agent.model=m2"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Entries) != 1 || e.Entries[0].Task.ID != "a" || e.Entries[0].Task.Agent.Model != "m2" {
		t.Fatalf("file's tags filter: %+v", e.Entries)
	}
	e, err = LoadExperiment(p, ExperimentOptions{Tags: []string{"slow", "fast"}})
	if err != nil || len(e.Entries) != 2 {
		t.Fatalf("--tags replaces the filter: %v %v", e, err)
	}
	if !IsExperiment(p) || IsExperiment(filepath.Join(dir, "tasks/a/task.yaml")) {
		t.Error("IsExperiment tells the files apart wrongly")
	}
}

// parallel: auto asks the scheduler to pick the runs at once from the host (as -j auto);
// any other word is refused at its line.
func TestExperimentParallelAuto(t *testing.T) {
	for _, c := range []struct {
		value, err string
		auto       bool
		n          int
	}{
		{"auto", "", true, 0},
		{"3", "", false, 3},
		{`"auto"`, "", true, 0},
		{"fast", `exp.yaml:3:11: parallel (or auto) must be a whole number, got "fast"`, false, 0},
		{"0", "exp.yaml:3:11: parallel (or auto) must be between 1 and 1024, got 0", false, 0},
	} {
		dir := testtree.New(t, map[string]string{
			"tasks/a/task.yaml": taskA,
			"exp.yaml":          "experiment_id: e1\ntasks: [tasks/*/task.yaml]\nparallel: " + c.value + "\n",
		})
		e, err := LoadExperiment(filepath.Join(dir, "exp.yaml"), ExperimentOptions{})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parallel: %s: err %v, want %q", c.value, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("parallel: %s: %v", c.value, err)
		}
		if e.ParallelAuto != c.auto || e.Parallel != c.n {
			t.Errorf("parallel: %s: auto %v, n %d", c.value, e.ParallelAuto, e.Parallel)
		}
	}
}
