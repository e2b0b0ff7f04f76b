package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"mvdan.cc/sh/v3/syntax"

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

// splitWords splits s into the words of one simple command, as a POSIX shell would (the
// parser of mvdan.cc/sh), without expanding anything: quotes and backslashes are removed,
// and anything that would need a shell to run (a pipe, a list, a redirection, an
// assignment, a parameter, command or arithmetic expansion, a glob, a tilde) is refused, so
// what runs is exactly the argv the user sees.
func splitWords(s string) ([]string, error) {
	for _, r := range s {
		if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f {
			return nil, fmt.Errorf("control character %U in the command line", r)
		}
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(s), "")
	if err != nil {
		return nil, err
	}
	if len(f.Stmts) == 0 {
		return nil, nil
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if len(f.Stmts) != 1 || !ok || st.Negated || st.Background || st.Coprocess || len(st.Redirs) > 0 || len(call.Assigns) > 0 {
		return nil, errors.New("not one simple command: pipes, lists, redirections and assignments need a shell; write --agent \"/bin/sh -c '...'\"")
	}
	var words []string
	for _, w := range call.Args {
		var b strings.Builder
		if err := literalWord(&b, w.Parts); err != nil {
			return nil, fmt.Errorf("%w; quote it, or write --agent \"/bin/sh -c '...'\"", err)
		}
		words = append(words, b.String())
	}
	return words, nil
}

// literalWord writes the value of a word made only of literal text and quotes.
func literalWord(b *strings.Builder, parts []syntax.WordPart) error {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[") || strings.HasPrefix(p.Value, "~") && b.Len() == 0 {
				return fmt.Errorf("%q would be expanded by a shell (a glob or a tilde)", p.Value)
			}
			v, err := unescape(p.Value)
			if err != nil {
				return err
			}
			b.WriteString(v)
		case *syntax.SglQuoted:
			if p.Dollar {
				return errors.New("$'...' quoting needs a shell")
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return errors.New("$\"...\" quoting needs a shell")
			}
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return errors.New("an expansion inside double quotes needs a shell")
				}
				b.WriteString(unescapeDouble(lit.Value))
			}
		default:
			return errors.New("an expansion ($, `...`, $((...))) needs a shell")
		}
	}
	return nil
}

// unescape removes the backslashes of an unquoted literal (a backslash keeps the next
// character; a backslash-newline is removed).
func unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return "", errors.New("a trailing backslash escapes nothing")
		}
		i++
		if s[i] != '\n' {
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// unescapeDouble removes the backslashes double quotes remove (before " \ $ ` and newline).
func unescapeDouble(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
