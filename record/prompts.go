package record

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// PromptsFile, in an experiment's directory, holds the prompts its rephrase mutations
// made; PromptCallsFile the model calls that made them.
const (
	PromptsFile     = "prompts.json"
	PromptCallsFile = "prompt_calls.jsonl"
)

// Prompts is prompts.json: each rephrased prompt, so a resume (and a re-run that names this
// directory) runs the same prompts without asking the model again.
type Prompts struct {
	Entries []PromptRecord `json:"entries"`
}

// PromptRecord is one entry's rephrased prompt.
type PromptRecord struct {
	Variant     string `json:"variant_id"`
	TaskID      string `json:"task_id"`
	InputSHA256 string `json:"input_sha256"` // of the prompt before the mutation and the mutation's steps
	Mode        string `json:"mode"`         // live | replay | reused
	Prompt      string `json:"prompt"`
	// StepPrompts are a multi-step task's prompts, every step's in step order (Prompt is
	// the first's); absent for a task without steps and in records older than them.
	StepPrompts []string `json:"step_prompts,omitempty"`
}

// Find returns the recorded prompt of variant/task made from the same input.
func (p *Prompts) Find(variant, taskID, input string) (string, bool) {
	if p == nil {
		return "", false
	}
	for _, r := range p.Entries {
		if r.Variant == variant && r.TaskID == taskID && r.InputSHA256 == input {
			return r.Prompt, true
		}
	}
	return "", false
}

// FindRecord returns the record of variant/task made from the same input, nil when none.
func (p *Prompts) FindRecord(variant, taskID, input string) *PromptRecord {
	if p == nil {
		return nil
	}
	for i, r := range p.Entries {
		if r.Variant == variant && r.TaskID == taskID && r.InputSHA256 == input {
			return &p.Entries[i]
		}
	}
	return nil
}

// ReadPrompts reads prompts.json from an experiment's directory.
func ReadPrompts(expDir string) (*Prompts, error) {
	data, err := os.ReadFile(filepath.Join(expDir, PromptsFile))
	if err != nil {
		return nil, err
	}
	var p Prompts
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(expDir, PromptsFile), err)
	}
	return &p, nil
}

// StopFile, in an experiment's directory, says why stop_early stopped it.
const StopFile = "stopped_early.json"

// EarlyStop is stopped_early.json, and summary.json's stopped_early.
type EarlyStop struct {
	Time       string    `json:"time"`
	Compare    [2]string `json:"compare"`
	Metric     string    `json:"metric"`
	Confidence float64   `json:"confidence"`
	MinRuns    int       `json:"min_runs"`
	Test       string    `json:"test"`
	// AfterRuns is how many planned runs had finished when the test decided, of Planned.
	AfterRuns int `json:"after_runs"`
	Planned   int `json:"planned_runs"`
	// Pairs are the compared (task, repeat) pairs the test read, in plan order; Discordant
	// those where one variant passed alone, FirstOnly those where Compare[0] did.
	Pairs      int     `json:"pairs"`
	Discordant int     `json:"discordant"`
	FirstOnly  int     `json:"first_only"`
	LogE       float64 `json:"log_e_value"`
	LogBound   float64 `json:"log_bound"`
	Better     string  `json:"better"` // the variant with the higher pass rate
	Reason     string  `json:"reason"`
	// Resumed is when ceval run --resume started completing the stopped experiment.
	Resumed string `json:"resumed,omitempty"`
}

// ReadEarlyStop reads stopped_early.json from an experiment's directory.
func ReadEarlyStop(expDir string) (*EarlyStop, error) {
	data, err := os.ReadFile(filepath.Join(expDir, StopFile))
	if err != nil {
		return nil, err
	}
	var s EarlyStop
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(expDir, StopFile), err)
	}
	return &s, nil
}
