package audit

import (
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"ceval.dev/ceval/task"
)

// Warning is one weak pattern in a task's criteria: something a cheat can pass without
// solving the task, found without running anything.
type Warning struct {
	File   string
	Line   int
	Column int
	Msg    string
}

func (w Warning) String() string {
	return fmt.Sprintf("%s:%d:%d: warning: %s", w.File, w.Line, w.Column, w.Msg)
}

// agentRunners are commands that run files of the workspace they are given (or find there).
var agentRunners = regexp.MustCompile(`(^|[\s;&|(])(sh|bash|python3?|node|perl|ruby|pytest|make|npm|npx|yarn|go|cargo|\./[^\s;&|]+)(\s|$)`)

// Lint returns the weak patterns of t's criteria, each at its line in the task file: the
// static part of `ceval audit` (validate --strict).
func Lint(t *task.Task) []Warning {
	var out []Warning
	at := func(line, col int, format string, args ...any) {
		out = append(out, Warning{File: t.Path, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)})
	}
	if t.Solution == nil {
		at(1, 1, "no solution: ceval audit cannot prove the task solvable; add solution: {script: FILE} or {files: DIR} (grader-only, never in the agent's container)")
	}
	gating, existence := 0, 0
	prompt := strings.ToLower(t.Prompt)
	for i, c := range t.Criteria {
		if c.Weight <= 0 {
			continue
		}
		gating++
		what := fmt.Sprintf("success_criteria[%d] (%s)", i, c.Type)
		includesOnly := func(includes, excludes []string, patterns []task.PatternCheck) {
			if len(includes) > 0 && len(excludes) == 0 && len(patterns) == 0 {
				msg := "%s: includes without excludes: a file holding every expected string passes, whatever else it holds"
				if allIn(includes, prompt) {
					msg += "; every one of them is in the prompt, so a file of the prompt's words passes (cheat prompt-words)"
				}
				at(c.Line, c.Column, msg+"; add excludes, patterns or an executing check", what)
			}
		}
		switch s := c.Spec.(type) {
		case *task.FileExistsSpec:
			existence++
		case *task.FileContainsSpec:
			includesOnly(s.Includes, s.Excludes, nil)
		case *task.FileCheckSpec:
			includesOnly(s.Includes, s.Excludes, s.Patterns)
		case *task.FileMatchesRegexSpec:
			if regexp.MustCompile(s.Pattern).MatchString("") {
				at(c.Line, c.Column, "%s: pattern %q matches an empty file (cheat empty-files); anchor it or require content", what, s.Pattern)
			}
		case *task.JSONCheckSpec:
			weak := s.JSONSchema == nil && len(s.Assertions) > 0
			for _, a := range s.Assertions {
				weak = weak && (a.Operator == "exists" || a.Operator == "type")
			}
			if weak {
				at(c.Line, c.Column, "%s: only exists/type assertions and no schema: any JSON with those fields passes; assert their values", what)
			}
		}
		switch s := c.Spec.(type) {
		case *task.RunCommandSpec:
			if s.HarborReward {
				if file, line := testShPytest(s); line > 0 {
					at(c.Line, c.Column, "%s: %s:%d runs pytest, and test.sh writes the reward from it: when a test imports the agent's modules, the agent's code runs in pytest's own process and can rewrite every outcome, and with them the reward (cheat patch-test-runner, which ceval audit runs); grade those tests with a pytest criterion with sandbox: container, isolation: process and all_or_nothing: true (a 0/1 reward), or check what the agent's code cannot reach", what, file, line)
				}
			}
			if s.ExpectedStdout == nil && !s.ScoreFromStdout && !s.HarborReward && !s.UsesReference && agentRunners.MatchString(s.Command) {
				at(c.Line, c.Column, "%s: only the exit code of %q is checked, and it runs code the agent controls (cheats stub-tests, empty-tests, plant-hooks make it exit 0); check its output with expected_stdout, or run a check the agent cannot edit (uses_reference)", what, clip(s.Command, 60))
			}
		case *task.PytestSpec:
			if s.Verifier == nil {
				// The WASM tier has one interpreter and no processes: isolation: process is
				// refused there at load, so the way out is the container tier.
				at(c.Line, c.Column, "%s: the tests import the agent's code into pytest's own process, where it can rewrite every test's outcome (cheat patch-test-runner), and the WASM sandbox has no hardened mode (CPython for WASI runs the tests and the agent's code in one interpreter); give it sandbox: container, an image with python3 and pytest (packages: [python3-pytest]) and isolation: process, or check behaviour the agent's code cannot reach: run its program and check the output (run_command with expected_stdout)", what)
			} else if s.Isolation != task.IsolationProcess {
				at(c.Line, c.Column, "%s: the tests import the agent's code into pytest's own process, where it can rewrite every test's outcome (cheat patch-test-runner); give it sandbox: container and isolation: process (the agent's modules then run in a process of their own, behind plain-data proxies), or check behaviour the agent's code cannot reach: run its program and check the output (run_command with expected_stdout)", what)
			}
		}
	}
	if t.Iterations != nil && t.Iterations.Feedback != task.FeedbackNone {
		for i, c := range t.Criteria {
			if v := expectedInDescription(c, prompt); v != "" {
				at(c.Line, c.Column, "success_criteria[%d] (%s): its description holds its expected value %q, and iterations.feedback: %s shows descriptions to the agent as written; describe what is checked, not the answer",
					i, c.Type, clip(v, 40), t.Iterations.Feedback)
			}
		}
	}
	switch {
	case gating == 0:
		at(1, 1, "no gating criterion (every weight is 0): every run is SUCCESS, the null agent's too")
	case existence == gating:
		at(t.Criteria[0].Line, t.Criteria[0].Column, "only existence checks gate the task: an empty file at each path passes (cheat empty-files); check content")
	}
	return out
}

// expectedInDescription is the first of c's expected values (includes, expected_stdout,
// expected_label, a json_check equals) that its description holds as a whole word and the
// prompt does not already give, or "".
func expectedInDescription(c task.Criterion, prompt string) string {
	var vals []string
	var assertions []task.Assertion
	switch s := c.Spec.(type) {
	case *task.ClassificationMatchSpec:
		vals = []string{s.ExpectedLabel}
	case *task.FileContainsSpec:
		vals = s.Includes
	case *task.FileCheckSpec:
		vals = s.Includes
	case *task.JSONCheckSpec:
		assertions = s.Assertions
	}
	if sc := c.StdoutScoring(); sc != nil && sc.ExpectedStdout != nil {
		vals = append(vals[:len(vals):len(vals)], strings.TrimSpace(*sc.ExpectedStdout))
	}
	for _, a := range assertions {
		if a.Operator != "equals" && a.Operator != "" {
			continue
		}
		switch x := a.Expected.(type) {
		case string:
			vals = append(vals, x)
		case float64:
			vals = append(vals, strconv.FormatFloat(x, 'g', -1, 64))
		case int:
			vals = append(vals, strconv.Itoa(x))
		}
	}
	for _, v := range vals {
		if strings.TrimSpace(v) != "" && holdsWord(c.Description, v) && !strings.Contains(prompt, strings.ToLower(v)) {
			return v
		}
	}
	return ""
}

// holdsWord says whether s holds w with no letter or digit right before or after it.
func holdsWord(s, w string) bool {
	edge := func(i int) bool {
		if i < 0 || i >= len(s) {
			return true
		}
		r, _ := utf8.DecodeRuneInString(s[i:])
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}
	for from := 0; from <= len(s)-len(w); {
		i := strings.Index(s[from:], w)
		if i < 0 {
			return false
		}
		i += from
		if edge(i-1) && edge(i+len(w)) {
			return true
		}
		from = i + 1
	}
	return false
}

func allIn(needles []string, haystack string) bool {
	for _, n := range needles {
		if !strings.Contains(haystack, strings.ToLower(n)) {
			return false
		}
	}
	return true
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// testShPytest finds the pytest run in a harbor_reward criterion's tests/test.sh (the
// grader file its command sources): the file's task-relative name and the line of its first
// pytest, or line 0 when there is none (or no test.sh to read).
func testShPytest(c *task.RunCommandSpec) (string, int) {
	const maxTestSh = 1 << 20
	for _, gf := range c.GraderFiles {
		rel := gf.Rel
		if gf.Dir {
			rel = path.Join(rel, "test.sh")
		}
		if path.Base(rel) != "test.sh" || gf.Root == nil || gf.Root.Root() == nil {
			continue
		}
		f, err := gf.Root.Root().Open(rel)
		if err != nil {
			continue
		}
		data, err := io.ReadAll(io.LimitReader(f, maxTestSh))
		f.Close()
		if err != nil {
			continue
		}
		for i, l := range strings.Split(string(data), "\n") {
			l = strings.TrimSpace(l)
			if !strings.HasPrefix(l, "#") && pytestRun.MatchString(l) {
				return rel, i + 1
			}
		}
	}
	return "", 0
}

// pytestRun is a shell line that runs pytest: pytest, py.test, python3 -m pytest, uvx/uv run
// ... pytest.
var pytestRun = regexp.MustCompile(`(^|[\s;&|(/])(pytest|py\.test)(\s|$|;|&|\|)|-m\s+pytest\b`)
