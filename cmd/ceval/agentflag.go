package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/audit"
	"ceval.dev/ceval/task"
)

// Values of --agent besides a command line.
const (
	agentOracle = "oracle"
	agentNone   = "none"
)

const agentFlagHelp = "run this agent instead of the task's: claude-code, codex, oracle (the task's solution, as ceval audit runs it), " +
	"none (no agent: the workspace is graded as prepared) or a command line, e.g. 'python3 /opt/agent.py --fast' " +
	"(split into words like a shell does, but run without one); recorded in result.json (and plan.json: --resume keeps it)"

// addAgentFlag adds --agent to cmd.
func addAgentFlag(cmd *cobra.Command, spec *string) {
	cmd.Flags().StringVar(spec, "agent", "", agentFlagHelp)
}

// checkAgentSpec validates --agent without a task: what applyAgent can refuse up front.
func checkAgentSpec(spec string) error {
	switch spec {
	case "", task.AgentClaudeCode, task.AgentCodex, agentOracle, agentNone:
		return nil
	}
	argv, err := splitWords(spec)
	if err != nil {
		return fmt.Errorf("--agent %q: %w", spec, err)
	}
	if len(argv) == 0 {
		return fmt.Errorf("--agent %q: empty command; give claude-code, codex, oracle, none or a command line", spec)
	}
	return nil
}

// applyAgent replaces t's agent with the one --agent names ("" leaves it). A command,
// oracle or none agent gets no model gateway, so the task's run_limits (which the gateway
// meters) are dropped with its agent, as ceval audit does.
func applyAgent(t *task.Task, spec string) error {
	switch spec {
	case "":
		return nil
	case task.AgentClaudeCode, task.AgentCodex:
		if t.Agent != nil && t.Agent.Type == spec {
			return nil // the task's own agent of that type, with its model and args
		}
		t.Agent = &task.Agent{Type: spec, Gateway: &task.Gateway{Mode: task.GatewayForward}}
		return nil
	case agentOracle:
		if t.Solution == nil {
			return fmt.Errorf("--agent oracle: task %s (%s) has no solution: add solution: {script: FILE} or {files: DIR} to it (an imported Harbor task has one when its directory has solution/solve.sh)", t.ID, t.Path)
		}
		a, err := audit.Oracle(t.Solution)
		if err != nil {
			return fmt.Errorf("--agent oracle: task %s (%s): %w", t.ID, t.Path, err)
		}
		t.Agent = &task.Agent{Type: task.AgentCommand, Command: a.Argv}
	case agentNone:
		t.Agent = &task.Agent{Type: task.AgentCommand, Command: []string{"/bin/sh", "-c", ":"}}
	default:
		if err := checkAgentSpec(spec); err != nil {
			return err
		}
		argv, _ := splitWords(spec)
		t.Agent = &task.Agent{Type: task.AgentCommand, Command: argv}
	}
	t.RunLimits = nil
	return nil
}

// splitWords splits s into words as a POSIX shell does for a simple command, without
// expanding anything: blanks separate words; 'single' quotes keep everything; "double"
// quotes keep everything but \" \\ \$ \` (and a backslash-newline, removed); a backslash
// outside quotes keeps the next character. Shell syntax that would need a shell (| & ; < >
// ( ) $ ` and a leading ~ or #, or a glob) is refused unquoted, so what runs is exactly
// the argv the user sees.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			inWord = true
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j == len(rs) {
				return nil, errors.New("unterminated ' quote")
			}
			cur.WriteString(string(rs[i+1 : j]))
			i = j
		case c == '"':
			inWord = true
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				if rs[j] == '\\' && j+1 < len(rs) && strings.ContainsRune("\"\\$`\n", rs[j+1]) {
					if rs[j+1] != '\n' {
						cur.WriteRune(rs[j+1])
					}
					j++
					continue
				}
				if rs[j] == '$' || rs[j] == '`' {
					return nil, fmt.Errorf("%q inside double quotes would need a shell to expand: quote it with single quotes or a backslash", rs[j])
				}
				cur.WriteRune(rs[j])
			}
			if j == len(rs) {
				return nil, errors.New(`unterminated " quote`)
			}
			i = j
		case c == '\\':
			if i+1 == len(rs) {
				return nil, errors.New("a trailing backslash escapes nothing")
			}
			inWord = true
			i++
			if rs[i] != '\n' {
				cur.WriteRune(rs[i])
			}
		case strings.ContainsRune("|&;<>()$`*?[", c) || (c == '~' || c == '#') && !inWord:
			return nil, fmt.Errorf("%q is shell syntax, and the command runs without a shell: quote it, or run a shell yourself: --agent \"/bin/sh -c 'a | b'\"", c)
		case c < ' ' || c == 0x7f:
			return nil, fmt.Errorf("control character %q in the command line", c)
		default:
			inWord = true
			cur.WriteRune(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
