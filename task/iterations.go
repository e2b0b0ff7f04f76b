package task

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// Feedback levels of iterations.feedback: what a follow-up prompt may reveal of a graded
// iteration. Each is composed by ceval from the task's own words and the grade's numbers:
// none ever shows a check's output, a test name, a reference or grader file or an expected value.
const (
	FeedbackNone         = "none"         // only that the work did not pass yet
	FeedbackDescriptions = "descriptions" // the failed criteria's descriptions, as the task wrote them
	FeedbackDetails      = "details"      // also each one's position, type, status, score, weight and parts met
)

// Bounds of iterations and simulated_user.
const (
	MaxIterations        = 20
	MaxUserInstructions  = 64 << 10
	DefaultFeedbackLevel = FeedbackNone
)

// Iterations is iterations: the agent runs again over the same workspace and home, with a
// follow-up prompt, while the run is not SUCCESS and runs remain.
type Iterations struct {
	Max      int    // agent runs in all, the first included (>= 1)
	Feedback string // FeedbackNone, FeedbackDescriptions or FeedbackDetails
}

// SimulatedUser is simulated_user: a model (the judge of ceval's config, or the replay
// fixture) plays the human between iterations, writing each follow-up prompt from the
// instructions and the agent's last message, or ending the conversation.
type SimulatedUser struct {
	Instructions string
	MaxTurns     int      // follow-up prompts it may write at most
	Answers      []string // fixture's answers (replay), nil for a live model
}

// MaxRuns is how many times the task's agent may run: iterations.max, or with a simulated
// user 1+max_turns (the smaller when both are set); 1 without either. A multi-step task's
// agent may run that many times in each step (StepRuns).
func (t *Task) MaxRuns() int {
	if t.MultiStep() {
		return len(t.TaskSteps) * t.StepRuns()
	}
	return t.StepRuns()
}

// StepRuns is how many times the agent may run for one prompt: for a multi-step task, in
// each step (iterations and simulated_user follow up within a step); the task's MaxRuns
// otherwise.
func (t *Task) StepRuns() int {
	n := 1
	if t.Iterations != nil {
		n = t.Iterations.Max
	}
	if u := t.SimulatedUser; u != nil {
		if t.Iterations == nil {
			n = 1 + u.MaxTurns
		} else {
			n = min(n, 1+u.MaxTurns)
		}
	}
	return n
}

// iterations reads iterations: {max, feedback}.
func (l *loader) iterations(n *yaml.Node) *Iterations {
	it := &Iterations{Feedback: DefaultFeedbackLevel}
	got := l.mapping(n, "iterations", []field{
		{"max", func(v *yaml.Node) {
			var m int64
			l.integer(v, "iterations.max", 1, MaxIterations, &m)
			it.Max = int(m)
		}},
		{"feedback", func(v *yaml.Node) {
			l.enum(v, "iterations.feedback", []string{FeedbackNone, FeedbackDescriptions, FeedbackDetails}, &it.Feedback)
		}},
	})
	if got == nil {
		return nil
	}
	if _, ok := got["max"]; !ok {
		l.errorf(n, "iterations needs max: the number of agent runs in all, the first included (e.g. iterations: {max: 3, feedback: descriptions})")
		return nil
	}
	return it
}

// simulatedUser reads simulated_user: {instructions, max_turns, fixture}.
func (l *loader) simulatedUser(n *yaml.Node) *SimulatedUser {
	u := &SimulatedUser{}
	got := l.mapping(n, "simulated_user", []field{
		{"instructions", func(v *yaml.Node) {
			l.str(v, "simulated_user.instructions", &u.Instructions)
			switch {
			case strings.TrimSpace(u.Instructions) == "" && resolve(v).Kind == yaml.ScalarNode:
				l.errorf(resolve(v), "simulated_user.instructions is empty: say who the user is and what they want from the agent")
			case len(u.Instructions) > MaxUserInstructions:
				l.errorf(resolve(v), "simulated_user.instructions is %d bytes; at most %d", len(u.Instructions), MaxUserInstructions)
			}
		}},
		{"max_turns", func(v *yaml.Node) {
			var m int64
			l.integer(v, "simulated_user.max_turns", 1, MaxIterations-1, &m)
			u.MaxTurns = int(m)
		}},
		{"fixture", func(v *yaml.Node) { u.Answers = l.judgeFixture(v, "simulated_user.fixture") }},
	})
	if got == nil {
		return nil
	}
	for _, f := range []string{"instructions", "max_turns"} {
		if _, ok := got[f]; !ok {
			l.errorf(n, "simulated_user needs %s (e.g. simulated_user: {instructions: \"You are a user who wants ...\", max_turns: 3})", f)
			return nil
		}
	}
	return u
}
