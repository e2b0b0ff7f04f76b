package task

import "slices"

// applyStepPrompts lays the variant's prompt and its static mutation steps over each step's
// prompt of a multi-step task, as applyPrompt does over a task's one prompt; Task.Prompt is
// the first step's. A mutation that rephrases is left to the experiment's start, which
// rephrases each step's prompt (a fixture gives one answer per step, see indexEntries).
func (v rawVariant) applyStepPrompts(t *Task, f taskFile) Problems {
	if v.prompt == nil && v.mutation == nil {
		return nil
	}
	t.TaskSteps = slices.Clone(t.TaskSteps)
	for i := range t.TaskSteps {
		p := t.TaskSteps[i].Prompt
		if v.prompt != nil {
			p = v.prompt.Prefix + p + v.prompt.Suffix
		}
		if v.mutation != nil && !v.mutation.Rephrases() {
			out, err := v.mutation.Apply(p, 0, nil)
			if err != nil {
				return Problems{{File: f.name, Line: t.TaskSteps[i].Line, Column: t.TaskSteps[i].Column, Msg: err.Error()}}
			}
			p = out
		}
		t.TaskSteps[i].Prompt = p
	}
	t.Prompt = t.TaskSteps[0].Prompt
	return nil
}
