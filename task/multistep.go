package task

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
)

// A multi-step task (steps:) gives the agent an ordered list of prompts in one workspace
// (and one session, for Claude Code and Codex), each graded after the agent's turn for it.
// The names: the task file's key is steps: (the and Harbor's word); in Go and in
// result.json they are task steps (Task.TaskSteps, result.json's task_steps, the run
// directory's task_steps/<n>/), because setup: and after_agent: commands were steps first
// (Task.Setup, result.json's steps, the run directory's steps/*.log) and old result files
// keep that meaning.

// TaskStep is one step of a multi-step task.
type TaskStep struct {
	Name       string // unique in the task: [a-z0-9][a-z0-9_-]*; step-N when the task gives none
	Prompt     string // the step's prompt (read from PromptFile when that is used)
	PromptFile string // prompt_file as written, "" when inline
	// Files is a directory beside the task copied into the workspace before the step's
	// agent starts (over what is there, links never followed, never grading material); nil
	// when none.
	Files *Dir
	// First and Count place the step's criteria in Task.Criteria, which holds every step's
	// criteria in step order (so every check over a task's criteria covers them).
	First, Count int
	// StopOnFailure skips the steps after this one when it is not SUCCESS.
	StopOnFailure bool
	// Solution is the step's oracle (a script), run by `ceval audit` for this step; nil:
	// the task's solution, if any, runs for every step (with CEVAL_STEP set).
	Solution     *Solution
	Line, Column int

	stopGiven bool // the step sets stop_on_failure itself (the task's is the default)
}

// Rules that make a multi-step task's score and status from its steps' (step_score).
const (
	StepScoreAll  = "all"  // score: the lowest step's; SUCCESS only when every step is
	StepScoreMean = "mean" // score: the mean of the steps'; SUCCESS when it reaches the task pass threshold
	StepScoreLast = "last" // score and status: the last step's
)

// StepScoreRules lists step_score's values, the default first.
var StepScoreRules = []string{StepScoreAll, StepScoreMean, StepScoreLast}

// MaxTaskSteps bounds steps:.
const MaxTaskSteps = 32

var taskStepNamePattern = lazyregexp.New(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// MultiStep reports whether the task is a multi-step task (steps:).
func (t *Task) MultiStep() bool { return len(t.TaskSteps) > 0 }

// StepCriteria are step i's criteria (0-based), a view into t.Criteria.
func (t *Task) StepCriteria(i int) []Criterion {
	s := t.TaskSteps[i]
	return t.Criteria[s.First : s.First+s.Count : s.First+s.Count]
}

// ForStep is the task as step i (0-based) grades and prompts it: its prompt and criteria
// only. It shares t's material (never Close it); t itself is returned for a plain task.
func (t *Task) ForStep(i int) *Task {
	if !t.MultiStep() {
		return t
	}
	s := *t
	s.Prompt, s.PromptFile = t.TaskSteps[i].Prompt, t.TaskSteps[i].PromptFile
	s.Criteria = t.StepCriteria(i)
	s.TaskSteps = nil
	return &s
}

// StepIndex finds a step by its name or its 1-based number; false when none.
func (t *Task) StepIndex(s string) (int, bool) {
	for i, st := range t.TaskSteps {
		if st.Name == s || fmt.Sprint(i+1) == s {
			return i, true
		}
	}
	return 0, false
}

// StepNames are the steps' names, in order.
func (t *Task) StepNames() []string {
	var out []string
	for _, st := range t.TaskSteps {
		out = append(out, st.Name)
	}
	return out
}

// StepSolution is the oracle of step i: its own solution, else the task's (nil when none).
func (t *Task) StepSolution(i int) *Solution {
	if s := t.TaskSteps[i].Solution; s != nil {
		return s
	}
	return t.Solution
}

// taskSteps reads steps: each step's criteria are appended to t.Criteria (see TaskStep).
func (l *loader) taskSteps(n *yaml.Node, t *Task) {
	rn := resolve(n)
	if rn.Kind == yaml.SequenceNode && len(rn.Content) == 0 {
		l.errorf(rn, "steps must not be empty: list the steps, or leave steps out and give initial_prompt and success_criteria")
		return
	}
	if rn.Kind == yaml.SequenceNode && len(rn.Content) > MaxTaskSteps {
		l.errorf(rn, "steps has %d steps; at most %d are allowed", len(rn.Content), MaxTaskSteps)
		return
	}
	names := map[string]bool{}
	l.list(n, "steps", func(i int, item *yaml.Node) {
		where := fmt.Sprintf("steps[%d]", i)
		ri := resolve(item)
		st := TaskStep{Line: ri.Line, Column: ri.Column, First: len(t.Criteria)}
		var promptNode, promptFileNode, criteriaNode, nameNode *yaml.Node
		got := l.mapping(item, where, []field{
			{"name", func(v *yaml.Node) { nameNode = v; l.str(v, where+".name", &st.Name) }},
			{"prompt", func(v *yaml.Node) { promptNode = v; l.str(v, where+".prompt", &st.Prompt) }},
			{"prompt_file", func(v *yaml.Node) { promptFileNode = v; l.str(v, where+".prompt_file", &st.PromptFile) }},
			{"files", func(v *yaml.Node) { st.Files = l.openDir(v, where+".files") }},
			{"success_criteria", func(v *yaml.Node) {
				criteriaNode = v
				cs := l.criteria(v)
				t.Criteria = append(t.Criteria, cs...)
				st.Count = len(cs)
			}},
			{"stop_on_failure", func(v *yaml.Node) {
				l.boolean(v, where+".stop_on_failure", &st.StopOnFailure)
				// Remember it was given: the task's stop_on_failure is only the default.
				st.stopGiven = true
			}},
			{"solution", func(v *yaml.Node) { st.Solution = l.stepSolution(v, where+".solution") }},
		})
		if got == nil {
			return
		}
		switch {
		case nameNode == nil:
			st.Name = fmt.Sprintf("step-%d", i+1)
		case !taskStepNamePattern.MatchString(st.Name):
			l.errorf(resolve(nameNode), "%s.name %q: want 1-63 lowercase letters, digits, '-' and '_', starting with a letter or digit (it names the step's directory in the run)", where, st.Name)
		}
		if names[st.Name] {
			l.errorf(ri, "%s: step name %q is used twice; each step needs a name of its own", where, st.Name)
		}
		names[st.Name] = true
		switch {
		case promptNode != nil && promptFileNode != nil:
			l.errorf(resolve(promptFileNode), "%s: give prompt or prompt_file, not both", where)
		case promptNode == nil && promptFileNode == nil:
			l.errorf(ri, "%s: missing required field prompt (or prompt_file): what the agent is asked in this step", where)
		case promptFileNode != nil && st.PromptFile != "":
			if p, data := l.readFile(promptFileNode, where+".prompt_file"); p != "" {
				st.Prompt = string(data)
			}
		}
		if promptNode != nil && strings.TrimSpace(st.Prompt) == "" {
			l.errorf(resolve(promptNode), "%s.prompt is empty", where)
		}
		if criteriaNode == nil {
			l.errorf(ri, "%s: missing required field success_criteria (a non-empty list): what grades this step", where)
		}
		t.TaskSteps = append(t.TaskSteps, st)
	})
}

// stepSolution reads a step's solution: a script only (solution.files would overwrite
// the workspace the earlier steps built).
func (l *loader) stepSolution(n *yaml.Node, what string) *Solution {
	rn := resolve(n)
	s := &Solution{Line: rn.Line, Column: rn.Column}
	got := l.mapping(n, what, []field{
		{"script", func(v *yaml.Node) { s.Script = l.openFile(v, what+".script") }},
	})
	if got == nil || got["script"] == nil {
		if got != nil {
			l.errorf(rn, "%s: missing required field script (run by ceval audit's oracle in /workspace for this step)", what)
		}
		return nil
	}
	return s
}

// checkTaskSteps checks a multi-step task as a whole once every key is read: the keys a
// multi-step task replaces or cannot be combined with (each refused at its own line), the
// step_score and stop_on_failure defaults, and the steps' files and solutions against the
// grading material and the container-bound trees.
func (l *loader) checkTaskSteps(t *Task, top *yaml.Node, seen map[string]*yaml.Node) {
	if seen["steps"] == nil {
		for _, k := range []string{"step_score", "stop_on_failure"} {
			if key := seen[k]; key != nil {
				l.errorf(key, "%s is for a multi-step task: it needs steps (or leave %s out)", k, k)
			}
		}
		return
	}
	for _, k := range []struct{ key, why string }{
		{"initial_prompt", "each step gives its own prompt (steps[].prompt); the first step's is the agent's first prompt"},
		{"initial_prompt_file", "each step gives its own prompt_file (steps[].prompt_file)"},
		{"success_criteria", "each step gives its own success_criteria (steps[].success_criteria), graded after that step"},
	} {
		if key := seen[k.key]; key != nil {
			l.errorf(key, "%s cannot be given with steps: %s", k.key, k.why)
		}
	}
	if len(t.TaskSteps) == 0 {
		return
	}
	t.Prompt, t.PromptFile = t.TaskSteps[0].Prompt, t.TaskSteps[0].PromptFile
	for i := range t.TaskSteps {
		if !t.TaskSteps[i].stopGiven {
			t.TaskSteps[i].StopOnFailure = t.StopOnFailure
		}
	}
	if t.StepScore == "" {
		t.StepScore = StepScoreAll
	}
	materials, done := gradingMaterial(t)
	defer done()
	for i, st := range t.TaskSteps {
		if s := st.Solution; s != nil && s.Script != nil {
			materials = append(materials, material{fmt.Sprintf("steps[%d].solution.script", i), s.Script.f.Stat, nil})
		}
	}
	for i, st := range t.TaskSteps {
		n := &yaml.Node{Line: st.Line, Column: st.Column}
		if st.Files != nil {
			l.checkHoldsNoMaterial(n, fmt.Sprintf("steps[%d] (%s): files %s", i, st.Name, st.Files.Path), st.Files, materials,
				"a step's files reach the agent's workspace; keep them in a directory of their own")
		}
		if s := st.Solution; s != nil && s.Script != nil {
			l.checkSolutionNotIn(t, n, fmt.Sprintf("steps[%d].solution.script", i), s)
			other := *t // the template and plugins must not hold it either
			other.Solution = s
			l.checkSolutionHidden(&other)
		}
	}
	if t.Solution != nil {
		l.checkSolutionNotIn(t, &yaml.Node{Line: t.Solution.Line, Column: t.Solution.Column}, "solution", t.Solution)
	}
}

// checkHoldsNoMaterial refuses a directory d bound for a container that holds grading
// material or lies inside it (compared by device and inode, links never followed).
func (l *loader) checkHoldsNoMaterial(n *yaml.Node, what string, d *Dir, materials []material, fix string) {
	own, err := statID(d.root.Stat("."))
	if err != nil {
		l.errorf(n, "%s: %v", what, err)
		return
	}
	for _, m := range materials {
		id, err := statID(m.stat())
		if err != nil {
			l.errorf(n, "%s: cannot make sure it holds no grading material: %s: %v", what, m.name, err)
			continue
		}
		if p, err := findID(d.root, id); err != nil {
			l.errorf(n, "%s: cannot make sure it holds no grading material: %v", what, err)
		} else if p != "" {
			l.errorf(n, "%s holds %s (at %s): %s", what, m.name, p, fix)
		} else if m.root != nil {
			if p, err := findID(m.root, own); err == nil && p != "" {
				l.errorf(n, "%s lies inside %s (at %s): %s", what, m.name, p, fix)
			}
		}
	}
}

// checkSolutionNotIn refuses a solution that a step's files hold (they reach the agent).
func (l *loader) checkSolutionNotIn(t *Task, n *yaml.Node, what string, s *Solution) {
	var id fileID
	var err error
	if s.Files != nil {
		id, err = statID(s.Files.root.Stat("."))
	} else {
		id, err = statID(s.Script.f.Stat())
	}
	if err != nil {
		l.errorf(n, "%s: %v", what, err)
		return
	}
	for i, st := range t.TaskSteps {
		if st.Files == nil {
			continue
		}
		if p, err := findID(st.Files.root, id); err == nil && p != "" {
			l.errorf(n, "%s: steps[%d].files holds it (at %s), so the agent would see it; keep the solution outside the steps' files", what, i, p)
		}
	}
}

// closeTaskSteps releases the steps' handles.
func closeTaskSteps(steps []TaskStep) []error {
	var errs []error
	for _, s := range steps {
		errs = append(errs, s.Files.Close(), s.Solution.Close())
	}
	return errs
}

// stepScoreRule reads step_score.
func (l *loader) stepScoreRule(v *yaml.Node, t *Task) {
	l.enum(v, "step_score", StepScoreRules, &t.StepScore)
	if !slices.Contains(StepScoreRules, t.StepScore) {
		t.StepScore = ""
	}
}
