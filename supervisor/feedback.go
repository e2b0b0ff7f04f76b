package supervisor

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/task"
)

// feedbackIntro opens every follow-up prompt of iterations.
const feedbackIntro = "Your work on this task was checked and it does not pass yet. Keep working in /workspace until it is done.\n"

// criterionFeedback is all a follow-up prompt may say of one failed criterion: the task's
// own words for it and numbers the grade is made of. It has no field for a check's text
// (details, output, a test name, a judge's reason, a predicted label): feedback is an
// allowlist, so nothing a check, a test, a judge or a grader file produced, and nothing the
// agent wrote (quoted back next to hidden material it would be an oracle), can reach it.
type criterionFeedback struct {
	N           int           // 1-based position in success_criteria
	Type        string        // the criterion's type, as the task names it
	Description string        // the task's description, "" when it has none
	Status      grader.Status // FAIL, ERROR or NOT_GRADED
	Score       float64       // rounded to two decimals (see feedbackScore)
	Weight      float64
	Parts       *grader.Parts // checks met of those the task lists; nil for other types
}

// feedbackOf is the feedback of a failed iteration at the task's iterations.feedback level:
// nothing with none; each failed criterion's description with descriptions; all of
// criterionFeedback with details. Everything but the descriptions comes from the task's
// criteria by position, never from the grade's own text; a grade whose criteria do not
// line up with the task's yields no criteria at all.
func feedbackOf(t *task.Task, g *grader.Result) (level string, failed []criterionFeedback, passed int) {
	level = task.FeedbackNone
	if t.Iterations != nil {
		level = t.Iterations.Feedback
	}
	if level == task.FeedbackNone || g == nil || len(g.Criteria) != len(t.Criteria) {
		return level, nil, 0
	}
	for i, c := range g.Criteria {
		if c.Passed {
			passed++
			continue
		}
		tc := &t.Criteria[i]
		f := criterionFeedback{N: i + 1, Type: tc.Type, Description: strings.TrimSpace(tc.Description)}
		if level == task.FeedbackDetails {
			f.Status, f.Score, f.Weight = c.Status, feedbackScore(c.Score), tc.Weight
			if c.Parts != nil {
				p := *c.Parts
				f.Parts = &p
			}
		}
		failed = append(failed, f)
	}
	return level, failed, passed
}

// feedbackScore rounds a criterion's score to two decimals: a score can come from code the
// agent wrote running next to hidden material (score_from_stdout, pytest's pass fraction),
// and at full precision it would carry some 50 bits of that material per iteration.
func feedbackScore(s float64) float64 {
	if math.IsNaN(s) || s < 0 {
		return 0
	}
	return math.Round(min(s, 1)*100) / 100
}

// FeedbackPrompt is the follow-up prompt of a failed iteration, composed by ceval from
// feedbackOf alone: that the work does not pass yet; with descriptions, each failed
// criterion's description as the task wrote it; with details, also each one's position,
// type, status, score, weight and parts met, and how many criteria passed.
func FeedbackPrompt(t *task.Task, g *grader.Result) string {
	level, failed, passed := feedbackOf(t, g)
	var b strings.Builder
	b.WriteString(feedbackIntro)
	if level == task.FeedbackNone || len(failed) == 0 {
		return b.String()
	}
	if level == task.FeedbackDetails {
		fmt.Fprintf(&b, "\n%d of %d checks passed. These failed:\n", passed, len(t.Criteria))
	} else {
		b.WriteString("\nThese checks failed:\n")
	}
	for _, f := range failed {
		desc := oneLine(f.Description)
		if desc == "" {
			desc = "(a check without a description)"
		}
		if level != task.FeedbackDetails {
			fmt.Fprintf(&b, "- %s\n", desc)
			continue
		}
		fmt.Fprintf(&b, "- check %d (%s): %s\n  %s, score %.2f, weight %s", f.N, f.Type, desc, f.Status, f.Score, strconv.FormatFloat(f.Weight, 'f', -1, 64))
		if f.Parts != nil {
			fmt.Fprintf(&b, ", %d of %d of its checks met", f.Parts.Met, f.Parts.Total)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
