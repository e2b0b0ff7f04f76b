package toolcalls

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkReadTranscript reads a transcript of 200 calls whose requests carry a growing
// history (up to ~1 MiB, as a long Claude Code session's do) and whose answers each ask for
// a tool call.
func BenchmarkReadTranscript(b *testing.B) {
	var sb strings.Builder
	var history []any
	for i := 0; i < 200; i++ {
		history = append(history,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": fmt.Sprintf("t%d", i), "name": "Bash", "input": map[string]any{"command": "ls"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": fmt.Sprintf("t%d", i), "content": strings.Repeat("x", 2500)}}})
		answer := fmt.Sprintf(`{"content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"ls -la"}}]}`, i+1)
		line, _ := json.Marshal(map[string]any{"api": "anthropic", "status": 200, "content_type": "application/json",
			"request": map[string]any{"messages": history}, "response": answer})
		sb.Write(line)
		sb.WriteByte('\n')
	}
	data := sb.String()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := Read(strings.NewReader(data))
		if err != nil || l.Total != 200 {
			b.Fatalf("%v %d", err, l.Total)
		}
	}
}
