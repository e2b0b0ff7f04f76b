package experiment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"ceval.dev/ceval/judge"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/supervisor"
	"ceval.dev/ceval/task"
)

// rephraseSystem frames a rephrase: the model rewrites a prompt an agent will get.
const rephraseSystem = "You rewrite the prompt of a coding task that an AI coding agent will be given. " +
	"Follow the instructions inside <instructions>. Keep every requirement, file name, command and " +
	"constraint of the prompt inside <prompt>; change only how it is said. Answer with the rewritten " +
	"prompt alone: no preamble, no quotes, no commentary, no tags."

func rephraseUser(instructions, prompt string) string {
	return "<instructions>\n" + instructions + "\n</instructions>\n\n<prompt>\n" + prompt + "\n</prompt>"
}

// PromptsOptions configure ResolvePrompts.
type PromptsOptions struct {
	Judge  *judge.Judge    // the judge of ceval's config, for a rephrase without a fixture
	Reuse  *record.Prompts // earlier rephrasings (a resume's prompts.json); used when their input matches
	Log    io.Writer       // receives prompt_calls.jsonl; nil: none
	Replay bool            // ask no model: leave live rephrases pending (plan)
}

// PromptInput identifies what a rephrase starts from: the prompt before the mutation (each
// step's of a multi-step task) and the mutation's steps (a fixture's answers included).
func PromptInput(en task.Entry) string {
	steps, _ := json.Marshal(en.Mutation.Steps)
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s\n%d:%s\n%d", len(en.Task.Prompt), en.Task.Prompt, len(steps), steps, en.Index)
	for _, st := range en.Task.TaskSteps[min(1, len(en.Task.TaskSteps)):] { // a multi-step task's later steps (a plain task's input is as it was)
		fmt.Fprintf(h, "\nstep %d:%s", len(st.Prompt), st.Prompt)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ResolvePrompts makes the prompt of each entry whose variant rephrases: reused from
// o.Reuse when recorded for the same input, else replayed from the step's fixture, else
// asked of the judge model (host-side; each entry its own budget). It sets Task.Prompt and
// returns what it made, for prompts.json. With o.Replay, live rephrases stay pending and
// are listed in pending.
func ResolvePrompts(ctx context.Context, e *task.Experiment, o PromptsOptions) (made *record.Prompts, pending []int, err error) {
	made = &record.Prompts{}
	for i := range e.Entries {
		en := &e.Entries[i]
		if en.Mutation == nil || !en.Mutation.Rephrases() {
			continue
		}
		input := PromptInput(*en)
		if r := o.Reuse.FindRecord(en.Variant, en.Task.ID, input); r != nil && len(r.StepPrompts) == len(en.Task.TaskSteps) {
			en.Task.Prompt = r.Prompt
			setStepPrompts(en.Task, r.StepPrompts)
			made.Entries = append(made.Entries, record.PromptRecord{Variant: en.Variant, TaskID: en.Task.ID, InputSHA256: input, Mode: "reused", Prompt: r.Prompt, StepPrompts: r.StepPrompts})
			continue
		}
		mode := "replay"
		live := false
		for _, s := range en.Mutation.Steps {
			live = live || s.Type == task.MutateRephrase && s.Answers == nil
		}
		if live && o.Replay {
			pending = append(pending, i)
			continue
		}
		if live {
			mode = "live"
			if o.Judge == nil {
				return nil, nil, &sandbox.InputError{Err: fmt.Errorf("variant %s rephrases its prompts with a model, and ceval's config has no judge: add judge: {api: anthropic, model: ...} to the config file (--config), or give the rephrase a fixture", en.Variant)}
			}
			if err := o.Judge.Ready(); err != nil {
				return nil, nil, &sandbox.InputError{Err: fmt.Errorf("variant %s rephrases its prompts: %w", en.Variant, err)}
			}
		}
		rephrase := func(s *task.PromptStep, index int, prompt string) (string, error) {
			var j *judge.Judge
			if s.Answers != nil {
				j = judge.NewReplay(o.Log, nil).WithFixture(&judge.Fixture{Answers: []string{s.Answers[index]}})
			} else {
				j = o.Judge.ForRun(o.Log, nil)
			}
			return j.Rewrite(ctx, rephraseSystem, rephraseUser(s.Instructions, prompt))
		}
		if en.Task.MultiStep() { // each step's prompt, a fixture's answers one per step from the entry's
			var stepPrompts []string
			for k, st := range en.Task.TaskSteps {
				p, err := en.Mutation.Apply(st.Prompt, en.Index+k, rephrase)
				if err != nil {
					return nil, nil, &supervisor.InfraError{Err: fmt.Errorf("task %s, step %d %s: %w", en.Task.ID, k+1, st.Name, err)}
				}
				stepPrompts = append(stepPrompts, p)
			}
			en.Task.Prompt = stepPrompts[0]
			setStepPrompts(en.Task, stepPrompts)
			made.Entries = append(made.Entries, record.PromptRecord{Variant: en.Variant, TaskID: en.Task.ID, InputSHA256: input, Mode: mode, Prompt: stepPrompts[0], StepPrompts: stepPrompts})
			continue
		}
		p, err := en.Mutation.Apply(en.Task.Prompt, en.Index, rephrase)
		if err != nil {
			return nil, nil, &supervisor.InfraError{Err: fmt.Errorf("task %s: %w", en.Task.ID, err)}
		}
		en.Task.Prompt = p
		made.Entries = append(made.Entries, record.PromptRecord{Variant: en.Variant, TaskID: en.Task.ID, InputSHA256: input, Mode: mode, Prompt: p})
	}
	return made, pending, nil
}

// setStepPrompts gives a multi-step task's steps their prompts (a copy of its steps, which
// the loader may share between entries).
func setStepPrompts(t *task.Task, prompts []string) {
	if !t.MultiStep() {
		return
	}
	t.TaskSteps = slices.Clone(t.TaskSteps)
	for i := range t.TaskSteps {
		t.TaskSteps[i].Prompt = prompts[i]
	}
}

// experimentPrompts rephrases what the experiment rephrases, before its plan: a resume
// takes every rephrased prompt from the earlier start's prompts.json (never a new model
// call, so the plan matches), a fresh start also from o.PromptsFrom's when the input
// matches; what it made is written to prompts.json, the calls to prompt_calls.jsonl. A
// rephrased prompt is held to what supervisor.Run would refuse (its length in argv).
func experimentPrompts(ctx context.Context, e *task.Experiment, expDir string, o Options) (err error) {
	rephrases := false
	for _, en := range e.Entries {
		rephrases = rephrases || en.Mutation != nil && en.Mutation.Rephrases()
	}
	if !rephrases {
		return nil
	}
	defer func() {
		for _, en := range e.Entries {
			if err == nil && en.Mutation != nil && en.Mutation.Rephrases() {
				if cerr := supervisor.Check(en.Task, o.Run); cerr != nil {
					err = &sandbox.InputError{Err: fmt.Errorf("%s (variant %s, rephrased): %w", en.Task.ID, en.Variant, errors.Unwrap(cerr))}
				}
			}
		}
	}()
	var reuse *record.Prompts
	switch {
	case o.Resume:
		p, err := record.ReadPrompts(expDir)
		if err != nil {
			return &sandbox.InputError{Err: fmt.Errorf("resume %s: the experiment rephrases prompts and their record is missing: %w", expDir, err)}
		}
		reuse = p
	case o.PromptsFrom != "":
		p, err := record.ReadPrompts(o.PromptsFrom)
		if err != nil {
			return &sandbox.InputError{Err: fmt.Errorf("--prompts-from %s: %w", o.PromptsFrom, err)}
		}
		reuse = p
	}
	log, err := os.OpenFile(filepath.Join(expDir, record.PromptCallsFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return &supervisor.InfraError{Err: err}
	}
	defer log.Close()
	opts := PromptsOptions{Judge: o.Run.Judge, Reuse: reuse, Log: log}
	if o.Resume {
		opts.Judge = nil // a prompt the record lacks is refused below, never made anew
	}
	made, _, err := ResolvePrompts(ctx, e, opts)
	if err != nil {
		var ie *sandbox.InputError
		if o.Resume && errors.As(err, &ie) {
			return &sandbox.InputError{Err: fmt.Errorf("resume %s: a rephrased prompt is not in %s (the mutation or the task's prompt changed): %w", expDir, record.PromptsFile, err)}
		}
		return err
	}
	if o.Resume {
		return nil // prompts.json stands as the first start wrote it
	}
	if err := record.WriteJSONAtomic(filepath.Join(expDir, record.PromptsFile), made); err != nil {
		return &supervisor.InfraError{Err: err}
	}
	return nil
}
