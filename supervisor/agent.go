package supervisor

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/task"
)

// Paths inside the agent's container.
const (
	ContainerWorkspace = "/workspace"
	ContainerHome      = "/home/agent"
	ContainerPrompt    = ContainerHome + "/.ceval/prompt.md"
)

// maxPromptArg bounds a prompt passed in argv (Linux caps one argument at 128 KiB).
const maxPromptArg = 120 << 10

// defaultCredential is the variable each agent CLI reads its API key from. The real one
// stays in ceval (the model gateway reads it): an agent with a gateway may not have it
// passed through, gets the per-run key under that name instead, and the real value is
// redacted from everything ceval writes.
var defaultCredential = map[string]string{
	task.AgentClaudeCode: "ANTHROPIC_API_KEY",
	task.AgentCodex:      "OPENAI_API_KEY",
}

// Allow is what the user (not the task) permits: host variables a task may receive by name,
// and host networking.
type Allow struct {
	Env         []string
	HostNetwork bool
}

// AgentArgv returns the argv that runs the task's agent in the container.
func AgentArgv(t *task.Task) ([]string, error) {
	a := t.Agent
	if a == nil {
		return nil, fmt.Errorf("task %s names no agent; add an agent section (type command, claude-code or codex) to run it", t.ID)
	}
	switch a.Type {
	case task.AgentCommand:
		return append(append([]string{}, a.Command...), a.Args...), nil
	case task.AgentClaudeCode:
		if len(t.Prompt) > maxPromptArg {
			return nil, fmt.Errorf("prompt is %d bytes; claude-code takes it as one argument of at most %d", len(t.Prompt), maxPromptArg)
		}
		argv := []string{"claude", "-p", t.Prompt, "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}
		for _, p := range t.Plugins {
			argv = append(argv, "--plugin-dir", p.Mount) // Claude Code loads a plugin root per flag
		}
		argv = append(argv, claudeMCPArgs(t)...) // mcp.go
		if a.Model != "" {
			argv = append(argv, "--model", a.Model)
		}
		return append(argv, a.Args...), nil
	case task.AgentCodex:
		if len(t.Prompt) > maxPromptArg {
			return nil, fmt.Errorf("prompt is %d bytes; codex takes it as one argument of at most %d", len(t.Prompt), maxPromptArg)
		}
		// Codex's own sandbox cannot work inside a container; ceval's container is the sandbox.
		argv := []string{"codex", "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-C", ContainerWorkspace}
		if a.Model != "" {
			argv = append(argv, "--model", a.Model)
		}
		argv = append(argv, a.Args...)
		return append(argv, t.Prompt), nil
	}
	return nil, fmt.Errorf("unknown agent type %q", a.Type)
}

// AgentEnv builds the agent's environment beyond the sandbox's fixed variables: the prompt
// location, each agent type's own settings, and the host variables the task passes through,
// each of which the user must have allowed. It returns the values that must be redacted from
// everything ceval writes.
func AgentEnv(t *task.Task, allow Allow, lookup func(string) (string, bool)) (env []string, secrets []string, err error) {
	a := t.Agent
	if a == nil {
		return nil, nil, fmt.Errorf("task %s names no agent", t.ID)
	}
	env = []string{"CEVAL_PROMPT_FILE=" + ContainerPrompt, "CEVAL_TASK_ID=" + t.ID}
	if len(t.Plugins) > 0 {
		dirs := make([]string, len(t.Plugins))
		for i, p := range t.Plugins {
			dirs[i] = p.Mount
		}
		env = append(env, "CEVAL_PLUGIN_DIRS="+strings.Join(dirs, ":")) // for any agent CLI
	}
	switch a.Type {
	case task.AgentClaudeCode:
		env = append(env, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	case task.AgentCodex:
		env = append(env, "CODEX_HOME="+ContainerHome+"/.codex")
	}
	names := append([]string{}, a.EnvPassthrough...)
	for _, p := range providerEnv {
		if a.Gateway != nil && contains(names, p.key) {
			return nil, nil, fmt.Errorf("task %s passes %s through, but its agent uses the model gateway, which holds the real credential; remove it from env_passthrough", t.ID, p.key)
		}
		if v, ok := lookup(p.key); ok && len(v) >= 4 {
			secrets = append(secrets, v)
		}
	}
	allowed := map[string]bool{}
	for _, n := range allow.Env {
		allowed[n] = true
	}
	var refused []string
	for _, n := range names {
		if !allowed[n] {
			refused = append(refused, n)
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		flags := make([]string, len(refused))
		for i, n := range refused {
			flags[i] = "--allow-env " + n
		}
		return nil, nil, fmt.Errorf("task %s wants host variable(s) %s passed to the agent; allow them with %s",
			t.ID, strings.Join(refused, ", "), strings.Join(flags, " "))
	}
	for _, n := range names {
		v, ok := lookup(n)
		if !ok {
			continue
		}
		env = append(env, n+"="+v)
		if n == defaultCredential[a.Type] || credentialName.MatchString(n) {
			if len(v) >= 4 {
				secrets = append(secrets, v)
			}
		}
	}
	return env, secrets, nil
}

var credentialName = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)`)

// CheckNetwork refuses host networking unless the user allowed it.
func CheckNetwork(t *task.Task, allow Allow) error {
	if t.Sandbox.Network == policy.NetworkHost && !allow.HostNetwork {
		return fmt.Errorf("task %s asks for sandbox.network: host; allow it with --allow-host-network", t.ID)
	}
	return checkServiceNetwork(t, allow) // services.go
}

// Redactor replaces each secret with [REDACTED].
func Redactor(secrets []string) func(string) string {
	if len(secrets) == 0 {
		return func(s string) string { return s }
	}
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, "[REDACTED]")
	}
	r := strings.NewReplacer(pairs...)
	return r.Replace
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
