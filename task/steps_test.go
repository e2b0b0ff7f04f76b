package task

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestStepsTakeACommandOrARunAndTimeoutMapping(t *testing.T) {
	doc := minimal + `setup:
  - pip install --user -r requirements.txt
  - {run: "make deps", timeout: 90s}
after_agent:
  - run: |
      make build
      make docs
    timeout: 2m
`
	tk, err := Load(writeTask(t, doc, nil))
	if err != nil {
		t.Fatal(err)
	}
	wantSetup := []Step{{Run: "pip install --user -r requirements.txt", Timeout: DefaultStepTimeout}, {Run: "make deps", Timeout: 90 * time.Second}}
	if !slices.Equal(tk.Setup, wantSetup) {
		t.Errorf("setup = %+v, want %+v", tk.Setup, wantSetup)
	}
	wantAfter := []Step{{Run: "make build\nmake docs\n", Timeout: 2 * time.Minute}}
	if !slices.Equal(tk.AfterAgent, wantAfter) {
		t.Errorf("after_agent = %+v, want %+v", tk.AfterAgent, wantAfter)
	}
	if none, err := Load(writeTask(t, minimal, nil)); err != nil || len(none.Setup) != 0 || len(none.AfterAgent) != 0 {
		t.Errorf("a task without steps has setup %v, after_agent %v (%v)", none.Setup, none.AfterAgent, err)
	}
}

func TestBadStepsAreReportedAtTheirPosition(t *testing.T) {
	for _, tc := range []struct {
		name, steps, want string
	}{
		{"not a list", "setup: make\n", "5:8: setup must be a list, got a scalar"},
		{"empty command", "setup:\n  - \"  \"\n", "6:5: setup[0] is empty"},
		{"null command", "after_agent:\n  - ~\n", "6:5: after_agent[0] must be a scalar, got null"},
		{"list item", "setup:\n  - [make, build]\n", "6:5: setup[0] must be a shell command or a mapping"},
		{"missing run", "setup:\n  - {timeout: 1m}\n", "6:5: setup[0]: missing required field run"},
		{"unknown field", "after_agent:\n  - {run: make, cwd: /tmp}\n", `6:17: unknown field "cwd" in after_agent[0] (known fields: run, timeout)`},
		{"run not a string", "setup:\n  - {run: [make]}\n", "6:11: setup[0].run must be a scalar, got a list"},
		{"bad timeout", "setup:\n  - {run: make, timeout: soon}\n", `6:26: setup[0].timeout: "soon" is not a duration`},
		{"zero timeout", "setup:\n  - {run: make, timeout: 0s}\n", "6:26: setup[0].timeout must be positive"},
		{"timeout too long", "after_agent:\n  - {run: make, timeout: 3h}\n", "6:26: after_agent[0].timeout is 3h0m0s; at most 2h0m0s"},
		{"NUL byte", "setup:\n  - \"make\\0evil\"\n", "6:5: setup[0] holds a NUL byte"},
		{"too long", "setup:\n  - " + strings.Repeat("x", maxStepCommand+1) + "\n", "6:5: setup[0] is 122881 bytes"},
		{"too many", "setup: [" + strings.Repeat("true, ", MaxSteps) + "true]\n", "5:8: setup has 33 steps; at most 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTask(t, minimal+tc.steps, nil)
			_, err := Load(p)
			ps, ok := err.(Problems)
			if !ok {
				t.Fatalf("want Problems, got %v", err)
			}
			if !strings.Contains(ps.Error(), p+":"+tc.want) {
				t.Errorf("want %q at its position in:\n%s", tc.want, ps.Error())
			}
		})
	}
}
