package supervisor

import (
	"bufio"
	"encoding/json"
	"io"

	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// Usage is what an agent CLI reported about its own turns and tokens. The agent controls
// that stream, so it is recorded as reported and nothing (no limit, no score) depends on it.
type Usage struct {
	Turns  int            `json:"turns,omitempty"`
	Tokens map[string]int `json:"tokens,omitempty"`
	Source string         `json:"source,omitempty"` // which stream it was parsed from
}

// maxUsageLine bounds one line of agent output that the parser will look at.
const maxUsageLine = 4 << 20

// ParseUsage reads an agent's JSON stream output (claude-code stream-json, codex exec
// --json) and returns the usage it reports, or nil when it reports none. Lines that are not
// JSON, or too long, are skipped.
func ParseUsage(agentType string, r io.Reader) *Usage {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxUsageLine)
	u := &Usage{Tokens: map[string]int{}}
	found := false
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var ev struct {
			Type     string         `json:"type"`
			NumTurns int            `json:"num_turns"`
			Usage    map[string]any `json:"usage"`
		}
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		switch {
		case agentType == task.AgentClaudeCode && ev.Type == "result":
			// The final result event carries the whole session's usage; the last one wins.
			u.Turns = ev.NumTurns
			u.Tokens = numbers(ev.Usage)
			u.Source = "claude-code result event"
			found = true
		case agentType == task.AgentCodex && ev.Type == "turn.completed":
			u.Turns++
			for k, v := range numbers(ev.Usage) {
				u.Tokens[k] += v
			}
			u.Source = "codex turn.completed events"
			found = true
		}
	}
	if !found {
		return nil
	}
	return u
}

func numbers(m map[string]any) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		if f, ok := v.(float64); ok && f >= 0 && f < 1e15 {
			out[k] = int(f)
		}
	}
	return out
}

// addUsage adds what one iteration's CLI reported to the run's agent record.
func addUsage(a *record.AgentResult, u *Usage) {
	a.Turns += u.Turns
	if a.Tokens == nil {
		a.Tokens = map[string]int{}
	}
	for k, v := range u.Tokens {
		a.Tokens[k] += v
	}
	a.Usage = u.Source
}
