package grader

import (
	"fmt"
	"regexp"
	"strings"

	"ceval.dev/ceval/mockd"
	"ceval.dev/ceval/mockd/fixture"
	"ceval.dev/ceval/task"
)

// mockCalls grades cli_called and command_executed on the run's call log, which ceval's
// mock server wrote on the host: nothing the agent wrote counts. Refused and malformed
// requests (no tool) are not calls.
func mockCalls(c task.CriterionSpec, logPath string) verdict {
	if logPath == "" {
		return verdict{forced: NotGraded, details: "graded only on a run's protected-mock call log (ceval run), not offline"}
	}
	calls, err := mockd.ReadCalls(logPath)
	if err != nil {
		return errored("read the mock call log: %v", err)
	}
	var re *regexp.Regexp
	var cli *task.CLICalledSpec
	var count task.CallCount
	switch c := c.(type) {
	case *task.CommandExecutedSpec:
		if re, err = regexp.Compile(c.Pattern); err != nil {
			return errored("pattern: %v", err)
		}
		count = c.CallCount
	case *task.CLICalledSpec:
		cli, count = c, c.CallCount
	default:
		return errored("unknown call-log criterion %T", c)
	}
	n, total := 0, 0
	var example string
	for _, call := range calls {
		if call.Tool == "" {
			continue
		}
		total++
		line := strings.Join(append([]string{call.Tool}, call.Argv...), " ")
		var ok bool
		if re != nil {
			ok = re.MatchString(line)
		} else {
			ok = call.Tool == cli.Tool && argvHolds(cli, call.Argv)
		}
		if ok {
			n++
			if example == "" {
				example = quote(line, 200)
			}
		}
	}
	what := fmt.Sprintf("%d of %d logged call(s) match", n, total)
	if example != "" {
		what += " (first: " + example + ")"
	}
	switch {
	case n < count.MinCount:
		return failed("%s; want at least %d", what, count.MinCount)
	case count.MaxCount >= 0 && n > count.MaxCount:
		return failed("%s; want at most %d", what, count.MaxCount)
	}
	return scored(1, what)
}

// argvHolds reports whether a call's arguments satisfy cli_called's positional prefix and
// every flag check, parsed the way the mock server's normalized matching parses them.
func argvHolds(c *task.CLICalledSpec, argv []string) bool {
	pos, flags := fixture.SplitArgv(argv)
	if len(pos) < len(c.Positional) {
		return false
	}
	for i, p := range c.Positional {
		if pos[i] != p {
			return false
		}
	}
	for _, fc := range c.Flags {
		vals, present := flags[fc.Flag]
		switch fc.Op {
		case "present":
			if !present {
				return false
			}
		case "absent":
			if present {
				return false
			}
		default:
			if !anyValue(vals, fc) {
				return false
			}
		}
	}
	return true
}

func anyValue(vals []string, fc task.FlagCheck) bool {
	for _, v := range vals {
		switch fc.Op {
		case "equals":
			if v == fc.Value {
				return true
			}
		case "contains":
			if strings.Contains(v, fc.Value) {
				return true
			}
		case "regex":
			if ok, _ := regexp.MatchString(fc.Value, v); ok {
				return true
			}
		}
	}
	return false
}
