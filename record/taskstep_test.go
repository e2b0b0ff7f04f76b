package record

import (
	"math"
	"testing"
)

func TestCombineStepsByRule(t *testing.T) {
	pass := TaskStep{Status: StatusSuccess, Score: 1}
	part := TaskStep{Status: StatusSuccess, Score: 0.95}
	fail := TaskStep{Status: StatusFailure, Score: 0.5}
	timeout := TaskStep{Status: StatusTimeout, Score: 1}
	skipped := TaskStep{Status: StatusSkipped, Skipped: true}
	for _, tc := range []struct {
		name   string
		rule   string
		steps  []TaskStep
		score  float64
		status string
	}{
		{"all pass", StepScoreAll, []TaskStep{pass, part}, 0.95, StatusSuccess},
		{"all one fails", StepScoreAll, []TaskStep{pass, fail}, 0.5, StatusFailure},
		{"all a timed-out step passes nothing", StepScoreAll, []TaskStep{pass, timeout}, 1, StatusFailure},
		{"all skipped", StepScoreAll, []TaskStep{fail, skipped}, 0, StatusFailure},
		{"mean over threshold", StepScoreMean, []TaskStep{pass, part}, 0.975, StatusSuccess},
		{"mean under", StepScoreMean, []TaskStep{pass, fail}, 0.75, StatusFailure},
		{"mean counts a skipped step 0", StepScoreMean, []TaskStep{pass, skipped}, 0.5, StatusFailure},
		{"last passes after a failure", StepScoreLast, []TaskStep{fail, pass}, 1, StatusSuccess},
		{"last fails after a pass", StepScoreLast, []TaskStep{pass, fail}, 0.5, StatusFailure},
		{"last skipped", StepScoreLast, []TaskStep{fail, skipped}, 0, StatusFailure},
		{"an ERROR step makes the task ERROR", StepScoreLast, []TaskStep{{Status: StatusError}, pass}, 0, StatusError},
		{"a NOT_GRADED step", StepScoreMean, []TaskStep{pass, {Status: StatusNotGraded}}, 0, StatusNotGraded},
		{"default rule is all", "", []TaskStep{pass, fail}, 0.5, StatusFailure},
	} {
		score, status := CombineSteps(tc.rule, tc.steps)
		if math.Abs(score-tc.score) > 1e-9 || status != tc.status {
			t.Errorf("%s: got %v %s, want %v %s", tc.name, score, status, tc.score, tc.status)
		}
	}
}
