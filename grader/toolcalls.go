package grader

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"ceval.dev/ceval/task"
	"ceval.dev/ceval/toolcalls"
)

// toolCallCriterion grades tool_called, tool_calls_budget and skill_used on the tool calls
// read from the model gateway's transcript, which ceval wrote on the host from what the
// provider answered: nothing the agent wrote into its workspace or home counts.
func toolCallCriterion(c task.CriterionSpec, opts Options) verdict {
	if opts.ToolCallsError != nil {
		return errored("read the tool calls from the model gateway's transcript: %v", opts.ToolCallsError)
	}
	if opts.ToolCalls == nil {
		return verdict{forced: NotGraded, details: "graded only on a run's model gateway transcript (ceval run), not offline"}
	}
	switch c := c.(type) {
	case *task.ToolCalledSpec:
		return toolCalled(c, opts.ToolCalls)
	case *task.ToolCallsBudgetSpec:
		return toolCallsBudget(c, opts.ToolCalls)
	case *task.SkillUsedSpec:
		return skillUsed(c, opts.ToolCalls)
	}
	return errored("unknown tool-call criterion %T", c)
}

// callFilter is the part of a criterion that selects calls.
type callFilter struct {
	tool                string
	toolRe, inRe, exRe  *regexp.Regexp
	field, outcome, err string
}

func newFilter(c *task.ToolCallFilter) callFilter {
	f := callFilter{tool: c.Tool, field: c.InputField, outcome: c.Outcome}
	compile := func(what, p string) *regexp.Regexp {
		if p == "" || f.err != "" {
			return nil
		}
		// (?s): a multi-line command is one text, as coder_eval matches it.
		re, err := regexp.Compile("(?s)" + p)
		if err != nil {
			f.err = fmt.Sprintf("%s %q does not compile: %v", what, p, err)
		}
		return re
	}
	f.toolRe = compile("tool_pattern", c.ToolPattern)
	f.inRe = compile("input_pattern", c.InputPattern)
	f.exRe = compile("exclude_pattern", c.ExcludePattern)
	return f
}

func (f *callFilter) match(call *toolcalls.Call) bool {
	switch {
	case f.tool != "" && call.Name != f.tool:
		return false
	case f.toolRe != nil && !f.toolRe.MatchString(call.Name):
		return false
	case f.outcome == toolcalls.OutcomeOK && call.Outcome != toolcalls.OutcomeOK:
		return false
	case f.outcome == toolcalls.OutcomeError && call.Outcome != toolcalls.OutcomeError:
		return false
	}
	if f.inRe == nil && f.exRe == nil {
		return true
	}
	text, ok := inputText(call, f.field)
	if !ok {
		return false
	}
	if f.inRe != nil && !f.inRe.MatchString(text) {
		return false
	}
	return f.exRe == nil || !f.exRe.MatchString(text)
}

// inputText is what input_pattern tests: the named field, else a shell tool's command,
// else every field as a JSON object.
func inputText(call *toolcalls.Call, field string) (string, bool) {
	if field != "" {
		v, ok := call.Input[field]
		return v, ok
	}
	for _, k := range []string{"command", "cmd"} {
		if v, ok := call.Input[k]; ok {
			return v, true
		}
	}
	b, _ := json.Marshal(call.Input) // map keys sorted: the text is stable
	return string(b), true
}

// matching returns the calls the filter selects.
func matching(l *toolcalls.Log, f *callFilter) []*toolcalls.Call {
	var out []*toolcalls.Call
	for i := range l.Calls {
		if f.match(&l.Calls[i]) {
			out = append(out, &l.Calls[i])
		}
	}
	return out
}

// describeCalls lists up to n calls: sequence number, tool, short input and outcome.
func describeCalls(calls []*toolcalls.Call, n int) string {
	var parts []string
	for i, c := range calls {
		if i == n {
			parts = append(parts, fmt.Sprintf("and %d more", len(calls)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("#%d %s %s (%s)", c.Seq, quote(c.Name, 60), quote(c.Short(100), 120), c.Outcome))
	}
	return strings.Join(parts, ", ")
}

// truncation says when the transcript had more calls than were kept.
func truncation(l *toolcalls.Log) string {
	if l.Total > len(l.Calls) {
		return fmt.Sprintf("; only the first %d of %d calls were examined", len(l.Calls), l.Total)
	}
	return ""
}

// toolCalled scores as coder_eval's command_executed does: without max_count, the fraction
// of min_count reached (1 when min_count is 0); with it, 1 inside [min_count, max_count].
func toolCalled(c *task.ToolCalledSpec, l *toolcalls.Log) verdict {
	f := newFilter(&c.ToolCallFilter)
	if f.err != "" {
		return errored("%s", f.err)
	}
	m := matching(l, &f)
	n := len(m)
	what := fmt.Sprintf("%d of %d tool call(s) match (%s)", n, len(l.Calls), &c.ToolCallFilter)
	if n > 0 {
		what += ": " + describeCalls(m, 5)
	}
	what += truncation(l)
	if c.MaxCount >= 0 {
		if n < c.MinCount || n > c.MaxCount {
			return scored(0, fmt.Sprintf("%s; want %d to %d", what, c.MinCount, c.MaxCount))
		}
		return scored(1, what)
	}
	if c.MinCount == 0 || n >= c.MinCount {
		return scored(1, what)
	}
	return scored(float64(n)/float64(c.MinCount), fmt.Sprintf("%s; want at least %d", what, c.MinCount))
}

// toolCallsBudget scores the number of matching calls: 1 at or under target, falling
// linearly to 0 at max (commands_efficiency: target/max(calls, target), 0 for no call).
func toolCallsBudget(c *task.ToolCallsBudgetSpec, l *toolcalls.Log) verdict {
	f := newFilter(&c.ToolCallFilter)
	if f.err != "" {
		return errored("%s", f.err)
	}
	n := len(matching(l, &f))
	what := fmt.Sprintf("%d tool call(s) (%s)", n, &c.ToolCallFilter) + truncation(l)
	if c.BudgetRatio {
		if n == 0 {
			return scored(0, what+"; no call recorded (did the agent run?)")
		}
		return scored(float64(c.Target)/float64(max(n, c.Target)), fmt.Sprintf("%s, expected %d", what, c.Target))
	}
	switch {
	case n <= c.Target:
		return scored(1, fmt.Sprintf("%s, at or under the target %d", what, c.Target))
	case n >= c.Max:
		return scored(0, fmt.Sprintf("%s, at or over the max %d", what, c.Max))
	}
	return scored(float64(c.Max-n)/float64(c.Max-c.Target), fmt.Sprintf("%s, between the target %d and the max %d", what, c.Target, c.Max))
}

// skillUsed finds the skill's use: Claude Code's Skill tool naming it, or any call whose
// input names a path inside the skill's directory (skills/NAME/SKILL.md read by a file tool
// or a shell command, as agents without a Skill tool load it).
func skillUsed(c *task.SkillUsedSpec, l *toolcalls.Log) verdict {
	bare := c.Skill
	if i := strings.LastIndex(bare, ":"); i >= 0 {
		bare = bare[i+1:]
	}
	path := regexp.MustCompile(`(^|[^A-Za-z0-9_.-])skills[\\/]+` + regexp.QuoteMeta(bare) + `[\\/]`)
	var used []*toolcalls.Call
	for i := range l.Calls {
		call := &l.Calls[i]
		if skillCall(call, c.Skill, bare) {
			used = append(used, call)
			continue
		}
		for _, v := range call.Input {
			if path.MatchString(v) {
				used = append(used, call)
				break
			}
		}
	}
	what := fmt.Sprintf("skill %s used by %s", quote(c.Skill, 100), plural(len(used), "call", "calls"))
	if len(used) > 0 {
		what += ": " + describeCalls(used, 3)
	}
	what += truncation(l)
	switch {
	case (len(used) > 0) == c.ExpectUsed:
		return scored(1, what)
	case c.ExpectUsed:
		return scored(0, what+"; want it used")
	}
	return scored(0, what+"; want it not used")
}

// skillCall reports whether a call is Claude Code's Skill tool naming the skill, with or
// without its plugin's namespace.
func skillCall(call *toolcalls.Call, skill, bare string) bool {
	if call.Name != "Skill" {
		return false
	}
	for _, k := range []string{"skill", "command"} {
		v := strings.TrimPrefix(strings.TrimSpace(call.Input[k]), "/")
		if v == "" {
			continue
		}
		if v == skill {
			return true
		}
		if i := strings.LastIndex(v, ":"); i >= 0 && !strings.Contains(skill, ":") && v[i+1:] == bare {
			return true
		}
	}
	return false
}
