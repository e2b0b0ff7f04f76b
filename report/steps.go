package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"ceval.dev/ceval/record"
)

// StepRate is one step of a multi-step task across its runs: how many ran it (were not
// skipped before it) and how many of those it passed.
type StepRate struct {
	Name     string  `json:"name"`
	Runs     int     `json:"runs"`    // runs with a result that reached the step
	Skipped  int     `json:"skipped"` // runs with a result that skipped it
	Passed   int     `json:"passed"`
	PassRate float64 `json:"pass_rate"` // Passed over Runs+Skipped: a skipped step is not passed
}

// passRateByStep is, for one multi-step task's runs (all of one task), each step's pass
// rate in step order; nil when the runs are of several tasks or of a task without steps.
func passRateByStep(runs []Run) []StepRate {
	var out []StepRate
	task := ""
	for _, r := range runs {
		if r.Result == nil || len(r.Result.TaskSteps) == 0 {
			continue
		}
		if task != "" && r.TaskID != task {
			return nil
		}
		task = r.TaskID
		for i, s := range r.Result.TaskSteps {
			if i >= len(out) {
				out = append(out, StepRate{Name: s.Name})
			}
			if out[i].Name != s.Name {
				return nil // the task's steps changed between runs
			}
			switch {
			case s.Skipped:
				out[i].Skipped++
			case s.Status == record.StatusSuccess:
				out[i].Runs++
				out[i].Passed++
			default:
				out[i].Runs++
			}
		}
	}
	for i := range out {
		if n := out[i].Runs + out[i].Skipped; n > 0 {
			out[i].PassRate = float64(out[i].Passed) / float64(n)
		}
	}
	return out
}

// taskStepViews makes a tab per step of a multi-step run, as iterationViews does per iteration:
// each step's grade and criteria (result.json's task_steps, their verifier outputs' tails)
// and its agent logs (task_steps/<n>/, the last graded step's the run directory's own).
func taskStepViews(r Run) []iterationView {
	if r.Result == nil || len(r.Result.TaskSteps) == 0 {
		return nil
	}
	lastRun := -1
	for i, s := range r.Result.TaskSteps {
		if !s.Skipped {
			lastRun = i
		}
	}
	var out []iterationView
	for i, s := range r.Result.TaskSteps {
		iv := iterationView{ID: fmt.Sprintf("task-step-tab-%d", s.N), Checked: i == max(lastRun, 0), Over: StripControls(s.Over),
			Label: StripControls(fmt.Sprintf("step %d %s: %s %.2f", s.N, s.Name, s.Status, s.Score))}
		if n := len(s.Iterations); n > 1 { // followed up within the step (iterations, simulated_user)
			iv.Label += fmt.Sprintf(" after %d runs", n)
		}
		for _, c := range s.Criteria {
			row := criterionRow{Type: StripControls(c.Type), Description: StripControls(c.Description),
				Status: StripControls(string(c.Status)), Details: StripControls(c.Details), Score: c.Score, Weight: c.Weight, Gating: c.Gating}
			for _, name := range c.OutputLogs {
				if verifierLog(name) {
					lp := preview(r.Dir, "", name)
					lp.Name, lp.Href = name, relHref(filepath.Dir(name), filepath.Base(name))
					row.Logs = append(row.Logs, lp)
				}
			}
			iv.Criteria = append(iv.Criteria, row)
		}
		if !s.Skipped {
			dir := filepath.Join(record.TaskStepsDir, strconv.Itoa(s.N))
			if _, err := os.Lstat(filepath.Join(r.Dir, dir, record.StdoutFile)); i == lastRun && err != nil {
				dir = "" // the last step that ran: its logs are the run directory's own
			}
			for _, name := range []string{record.StdoutFile, record.StderrFile} {
				lp := preview(r.Dir, "", filepath.Join(dir, name))
				lp.Name, lp.Href = filepath.Join(dir, name), relHref(dir, name)
				iv.Logs = append(iv.Logs, lp)
			}
			for _, it := range s.Iterations[:max(len(s.Iterations)-1, 0)] { // the step's earlier runs, kept apart
				d := filepath.Join(record.TaskStepsDir, strconv.Itoa(s.N), record.IterationsDir, strconv.Itoa(it.N))
				lp := preview(r.Dir, "", filepath.Join(d, record.StdoutFile))
				lp.Name, lp.Href = filepath.Join(d, record.StdoutFile), relHref(d, record.StdoutFile)
				iv.Logs = append(iv.Logs, lp)
			}
		}
		out = append(out, iv)
	}
	return out
}
