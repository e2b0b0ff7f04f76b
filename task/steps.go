package task

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Step is one command of a task's setup or after_agent list. ceval runs it as `/bin/sh -c
// RUN` in the agent's sandbox (package supervisor says exactly where and how).
type Step struct {
	Run     string
	Timeout time.Duration
}

// Bounds of setup and after_agent.
const (
	// DefaultStepTimeout is a step's timeout when it gives none: enough for a dependency
	// install or a build, short enough that a hung step does not hold a run for long.
	DefaultStepTimeout = 5 * time.Minute
	MaxStepTimeout     = 2 * time.Hour
	MaxSteps           = 32        // per list
	maxStepCommand     = 120 << 10 // one argv element (Linux caps one at 128 KiB)
)

// steps reads setup or after_agent (what): a list whose items are a command string or a
// mapping {run, timeout}.
func (l *loader) steps(n *yaml.Node, what string) []Step {
	out := []Step{}
	if rn := resolve(n); rn.Kind == yaml.SequenceNode && len(rn.Content) > MaxSteps {
		l.errorf(rn, "%s has %d steps; at most %d are allowed (join commands with && in one step)", what, len(rn.Content), MaxSteps)
		return out
	}
	l.list(n, what, func(i int, item *yaml.Node) {
		where := fmt.Sprintf("%s[%d]", what, i)
		st := Step{Timeout: DefaultStepTimeout}
		var runNode *yaml.Node
		switch ri := resolve(item); ri.Kind {
		case yaml.ScalarNode:
			runNode = item
		case yaml.MappingNode:
			got := l.mapping(item, where, []field{
				{"run", func(v *yaml.Node) { runNode = v }},
				{"timeout", func(v *yaml.Node) {
					l.duration(v, where+".timeout", &st.Timeout)
					if st.Timeout > MaxStepTimeout {
						l.errorf(resolve(v), "%s.timeout is %s; at most %s is allowed", where, st.Timeout, MaxStepTimeout)
					}
				}},
			})
			if got == nil {
				return
			}
			if runNode == nil {
				l.errorf(ri, "%s: missing required field run (the shell command)", where)
				return
			}
			where += ".run"
		default:
			l.errorf(ri, "%s must be a shell command or a mapping {run: COMMAND, timeout: DURATION}, got %s", where, kindName(ri))
			return
		}
		rn, ok := l.scalar(runNode, where)
		if !ok {
			return
		}
		switch {
		case strings.TrimSpace(rn.Value) == "":
			l.errorf(rn, "%s is empty: give the shell command to run", where)
		case strings.ContainsRune(rn.Value, 0):
			l.errorf(rn, "%s holds a NUL byte, which no command line can carry", where)
		case len(rn.Value) > maxStepCommand:
			l.errorf(rn, "%s is %d bytes; at most %d (put a longer script in the workspace and run it)", where, len(rn.Value), maxStepCommand)
		default:
			st.Run = rn.Value
			out = append(out, st)
		}
	})
	return out
}
