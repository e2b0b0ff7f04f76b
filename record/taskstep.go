package record

import "math"

// TaskStepsDir is the run directory's subdirectory holding one directory per step of a
// multi-step task (1, 2, ...): its result.json, and for every step but the last graded one
// (whose files are the run directory's own) its workspace snapshot, manifest, agent logs and
// sessions. (steps/ holds the setup and after_agent logs.)
const TaskStepsDir = "task_steps"

// TaskStep is one step of a multi-step task as it ran: result.json's task_steps (its
// steps are the setup and after_agent commands, as before multi-step tasks).
type TaskStep struct {
	N        int               `json:"n"` // 1-based
	Name     string            `json:"name"`
	Status   string            `json:"status"` // the step's run status, or StatusSkipped
	Score    float64           `json:"score"`
	Criteria []CriterionResult `json:"criteria"`
	Agent    float64           `json:"agent_seconds"`
	Skipped  bool              `json:"skipped,omitempty"`
	// Over is why no step followed this one when steps remained ("" while one did).
	Over string `json:"over,omitempty"`
	// Iterations are the agent's runs within this step, when the task has iterations or a
	// simulated user (which follow up within each step); the last is the step's grade.
	Iterations []Iteration `json:"iterations,omitempty"`
}

// StatusSkipped is a step of a multi-step task that did not run: an earlier step failed
// under stop_on_failure, was ERROR, or spent the task's time or budget. It scores 0.
const StatusSkipped = "SKIPPED"

// Rules of step_score (task.StepScoreRules).
const (
	StepScoreAll  = "all"
	StepScoreMean = "mean"
	StepScoreLast = "last"
)

// StepsPassThreshold is the mean score a multi-step task scored by its mean needs for
// SUCCESS: a criterion's default pass threshold.
const StepsPassThreshold = 0.9

// CombineSteps is a multi-step task's score and graded status from its steps' (a skipped
// step scores 0 and is not SUCCESS): ERROR when a step's grade was, else NOT_GRADED when one
// was not graded; else by rule: all, the lowest score and SUCCESS only when every step is;
// mean, the mean score and SUCCESS when it reaches StepsPassThreshold; last, the last
// step's score and status.
func CombineSteps(rule string, steps []TaskStep) (float64, string) {
	if len(steps) == 0 {
		return 0, StatusError
	}
	all, sum, low := true, 0.0, math.Inf(1)
	for _, s := range steps {
		switch s.Status {
		case StatusError:
			return 0, StatusError
		case StatusNotGraded:
			return 0, StatusNotGraded
		}
		all = all && s.Status == StatusSuccess
		sum += s.Score
		low = min(low, s.Score)
	}
	switch rule {
	case StepScoreMean:
		mean := sum / float64(len(steps))
		if mean+1e-9 >= StepsPassThreshold {
			return mean, StatusSuccess
		}
		return mean, StatusFailure
	case StepScoreLast:
		last := steps[len(steps)-1]
		if last.Status == StatusSuccess {
			return last.Score, StatusSuccess
		}
		return last.Score, StatusFailure
	}
	if all {
		return low, StatusSuccess
	}
	return low, StatusFailure
}
