package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIterationsAndSimulatedUser(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "user.yaml"), []byte("answers:\n  - {prompt: \"now add tests\", done: false}\n  - '{\"done\": true}'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := "task_id: t\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: a}]\n"
	good := []struct {
		name, doc string
		it        *Iterations
		user      *SimulatedUser
		runs      int
	}{
		{"neither", "", nil, nil, 1},
		{"iterations with the default feedback", "iterations: {max: 3}\n", &Iterations{Max: 3, Feedback: FeedbackNone}, nil, 3},
		{"iterations with details", "iterations: {max: 2, feedback: details}\n", &Iterations{Max: 2, Feedback: FeedbackDetails}, nil, 2},
		{"a simulated user alone", "simulated_user: {instructions: be terse, max_turns: 2}\n", nil, &SimulatedUser{Instructions: "be terse", MaxTurns: 2}, 3},
		{"both: the smaller bound", "iterations: {max: 2}\nsimulated_user: {instructions: u, max_turns: 5, fixture: user.yaml}\n",
			&Iterations{Max: 2, Feedback: FeedbackNone}, &SimulatedUser{Instructions: "u", MaxTurns: 5, Answers: []string{`{"done":false,"prompt":"now add tests"}`, `{"done": true}`}}, 2},
	}
	for _, c := range good {
		tk, err := Parse("task.yaml", dir, []byte(base+c.doc))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if (tk.Iterations == nil) != (c.it == nil) || (c.it != nil && *tk.Iterations != *c.it) {
			t.Errorf("%s: iterations %+v, want %+v", c.name, tk.Iterations, c.it)
		}
		if (tk.SimulatedUser == nil) != (c.user == nil) || (c.user != nil && (tk.SimulatedUser.Instructions != c.user.Instructions ||
			tk.SimulatedUser.MaxTurns != c.user.MaxTurns || strings.Join(tk.SimulatedUser.Answers, "|") != strings.Join(c.user.Answers, "|"))) {
			t.Errorf("%s: simulated_user %+v, want %+v", c.name, tk.SimulatedUser, c.user)
		}
		if got := tk.MaxRuns(); got != c.runs {
			t.Errorf("%s: MaxRuns %d, want %d", c.name, got, c.runs)
		}
	}

	// Each bad document yields exactly one problem, at FILE:LINE:COL.
	bad := []struct {
		name, doc, want string
	}{
		{"zero iterations", "iterations: {max: 0}\n", "task.yaml:4:19: iterations.max must be between 1 and 20, got 0"},
		{"too many iterations", "iterations: {max: 21}\n", "task.yaml:4:19: iterations.max must be between 1 and 20, got 21"},
		{"iterations as text", "iterations: {max: \"3\"}\n", "task.yaml:4:19: iterations.max must be a whole number"},
		{"no max", "iterations: {feedback: details}\n", "task.yaml:4:13: iterations needs max"},
		{"unknown feedback", "iterations: {max: 2, feedback: everything}\n", "task.yaml:4:32: iterations.feedback must be one of none, descriptions, details, got \"everything\""},
		{"unknown iterations field", "iterations: {max: 2, max_iterations: 3}\n", "task.yaml:4:22: unknown field \"max_iterations\" in iterations (known fields: feedback, max)"},
		{"iterations not a mapping", "iterations: 3\n", "task.yaml:4:13: iterations must be a mapping, got a scalar"},
		{"empty instructions", "simulated_user: {instructions: \"  \", max_turns: 1}\n", "task.yaml:4:32: simulated_user.instructions is empty"},
		{"no max_turns", "simulated_user: {instructions: u}\n", "task.yaml:4:17: simulated_user needs max_turns"},
		{"no instructions", "simulated_user: {max_turns: 2}\n", "task.yaml:4:17: simulated_user needs instructions"},
		{"zero turns", "simulated_user: {instructions: u, max_turns: 0}\n", "task.yaml:4:46: simulated_user.max_turns must be between 1 and 19, got 0"},
		{"missing fixture", "simulated_user: {instructions: u, max_turns: 1, fixture: nope.yaml}\n", "task.yaml:4:58: "},
	}
	for _, c := range bad {
		_, err := Parse("task.yaml", dir, []byte(base+c.doc))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		probs, ok := err.(Problems)
		if !ok || len(probs) != 1 || !strings.HasPrefix(probs[0].String(), c.want) {
			t.Errorf("%s: got %v\nwant %s", c.name, err, c.want)
		}
	}
}
