package record

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
)

// PlanFile is the experiment's plan, in RUNS/<run_id>/.
const PlanFile = "plan.json"

// Plan is plan.json: what an experiment runs, fixed when it starts, so that a resume can
// refuse to mix results of a different experiment into the same directory.
type Plan struct {
	ExperimentID string   `json:"experiment_id"`
	Experiment   string   `json:"experiment"` // absolute path of the experiment file
	Overrides    []string `json:"overrides,omitempty"`
	Tags         []string `json:"tags,omitempty"`
	// The rest of the command line a resume repeats: --root (absolute), --exclude-tags, and
	// the task files named after the experiment file (absolute), which replaced its list.
	Root        string   `json:"root,omitempty"`
	ExcludeTags []string `json:"exclude_tags,omitempty"`
	Tasks       []string `json:"tasks,omitempty"`
	// Agent is --agent, which replaced every variant's agent ("" = the tasks' own).
	Agent     string      `json:"agent,omitempty"`
	Repeats   int         `json:"repeats"`
	Variants  []string    `json:"variants"`
	Entries   []PlanEntry `json:"entries"`
	StopEarly *PlanStop   `json:"stop_early,omitempty"`
	// Images are the images the tasks name (but ceval's own) pinned to digests before the
	// first run; every run, and a resume, uses these digests.
	Images []ImagePin `json:"images,omitempty"`
}

// PlanStop is the experiment's stop_early.
type PlanStop struct {
	Compare    [2]string `json:"compare"`
	Metric     string    `json:"metric"`
	Confidence float64   `json:"confidence"`
	MinRuns    int       `json:"min_runs"`
}

// PlanEntry is one task under one variant, run Plan.Repeats times.
type PlanEntry struct {
	Variant    string `json:"variant_id"`
	TaskID     string `json:"task_id"`
	TaskPath   string `json:"task_path"`
	TaskSHA256 string `json:"task_sha256"` // task.Digest: the merged task and all its material
	// Prompt is the prompt the agent gets, when the variant's prompt or a prompt mutation
	// made it (a pending rephrase shows only in ceval plan, as PromptPending).
	Prompt        string `json:"prompt,omitempty"`
	PromptPending string `json:"prompt_pending,omitempty"`
	// StepPrompts are a multi-step task's prompts, every step's in step order, when Prompt
	// is set (it is the first's).
	StepPrompts []string `json:"step_prompts,omitempty"`
}

// PlannedRun is one run of a plan.
type PlannedRun struct {
	Entry  int // index into Plan.Entries
	Repeat int // 1-based
}

// Runs lists the plan's runs repeat-major (every entry once, then again), so that an
// interrupted experiment has covered as many tasks as it could.
func (p *Plan) Runs() []PlannedRun {
	var out []PlannedRun
	for r := 1; r <= p.Repeats; r++ {
		for i := range p.Entries {
			out = append(out, PlannedRun{Entry: i, Repeat: r})
		}
	}
	return out
}

// Dir returns a run's directory below the experiment's directory.
func (p *Plan) Dir(expDir string, r PlannedRun) string {
	en := p.Entries[r.Entry]
	return filepath.Join(expDir, en.Variant, en.TaskID, strconv.Itoa(r.Repeat))
}

// Diff describes how q differs from p, "" when it does not.
func (p *Plan) Diff(q *Plan) string {
	var d []string
	if p.ExperimentID != q.ExperimentID {
		d = append(d, fmt.Sprintf("experiment_id %q, recorded %q", q.ExperimentID, p.ExperimentID))
	}
	if p.Agent != q.Agent {
		d = append(d, fmt.Sprintf("--agent %q, recorded %q", q.Agent, p.Agent))
	}
	if p.Repeats != q.Repeats {
		d = append(d, fmt.Sprintf("repeats %d, recorded %d", q.Repeats, p.Repeats))
	}
	if !reflect.DeepEqual(p.Variants, q.Variants) {
		d = append(d, fmt.Sprintf("variants %v, recorded %v", q.Variants, p.Variants))
	}
	old := map[[2]string]PlanEntry{}
	for _, e := range p.Entries {
		old[[2]string{e.Variant, e.TaskID}] = e
	}
	now := map[[2]string]bool{}
	for _, e := range q.Entries {
		k := [2]string{e.Variant, e.TaskID}
		now[k] = true
		o, ok := old[k]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("%s/%s is new", e.Variant, e.TaskID))
		case o.TaskSHA256 != e.TaskSHA256:
			d = append(d, fmt.Sprintf("%s/%s changed (task, its material, defaults, variant or -D)", e.Variant, e.TaskID))
		}
	}
	for _, e := range p.Entries {
		if !now[[2]string{e.Variant, e.TaskID}] {
			d = append(d, fmt.Sprintf("%s/%s is gone", e.Variant, e.TaskID))
		}
	}
	if len(d) == 0 && !reflect.DeepEqual(p.Entries, q.Entries) {
		d = append(d, "the order of the runs changed")
	}
	return strings.Join(d, "; ")
}

// ReadPlan reads plan.json from an experiment's directory.
func ReadPlan(expDir string) (*Plan, error) {
	data, err := os.ReadFile(filepath.Join(expDir, PlanFile))
	if err != nil {
		return nil, err
	}
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(expDir, PlanFile), err)
	}
	return &p, nil
}

// ReadResult reads a run directory's result.json.
func ReadResult(runDir string) (*Result, error) {
	data, err := os.ReadFile(filepath.Join(runDir, ResultFile))
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(runDir, ResultFile), err)
	}
	r.Dir = runDir
	return &r, nil
}

// ConcurrencyFile is where an experiment run at -j auto records how it chose and changed
// the runs at once; summary.json repeats it.
const ConcurrencyFile = "concurrency.json"

// Concurrency is how -j auto chose and changed the runs at once.
type Concurrency struct {
	Mode    string              `json:"mode"`    // auto
	Max     int                 `json:"max"`     // the most it would have run at once
	Low     int                 `json:"low"`     // the fewest it chose
	High    int                 `json:"high"`    // the most it chose
	Final   int                 `json:"final"`   // at the end
	Changes []ConcurrencyChange `json:"changes"` // each choice, the first at the start
}

// ConcurrencyChange is one choice of -j auto: after how many finished runs, the runs at
// once, and why.
type ConcurrencyChange struct {
	AfterRuns int    `json:"after_runs"`
	Parallel  int    `json:"parallel"`
	Reason    string `json:"reason"`
}

// ReadConcurrency reads an experiment's concurrency.json.
func ReadConcurrency(expDir string) (*Concurrency, error) {
	data, err := os.ReadFile(filepath.Join(expDir, ConcurrencyFile))
	if err != nil {
		return nil, err
	}
	var c Concurrency
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(expDir, ConcurrencyFile), err)
	}
	return &c, nil
}
