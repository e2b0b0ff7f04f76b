package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/record"
)

// The run's panel lists the tool calls the model asked for, in order, as text: a hostile
// tool name or command is escaped and stripped of terminal sequences.
func TestReportHTMLShowsTheToolCallSequence(t *testing.T) {
	dir := hostileExperiment(t)
	rd := record.RunDir(filepath.Dir(dir), filepath.Base(dir), "bad", "a", 3)
	res, err := record.ReadResult(rd)
	if err != nil {
		t.Fatal(err)
	}
	res.Gateway = &record.GatewayResult{Mode: "replay", Log: record.ModelCallsFile}
	record.WriteJSONAtomic(filepath.Join(rd, record.ResultFile), res)
	line := func(v any) string { b, _ := json.Marshal(v); return string(b) + "\n" }
	answer := `{"content":[{"type":"tool_use","id":"a","name":"Read","input":{"file_path":"/workspace/app.py"}},` +
		`{"type":"tool_use","id":"b","name":"Bash<script>","input":{"command":"pytest -q \u001b[31m<img src=x>"}}]}`
	results := map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": "b", "is_error": true}}}}}
	os.WriteFile(filepath.Join(rd, record.ModelCallsFile), []byte(
		line(map[string]any{"api": "anthropic", "status": 200, "content_type": "application/json", "response": answer})+
			line(map[string]any{"api": "anthropic", "status": 200, "request": results, "content_type": "application/json", "response": `{"content":[]}`})), 0o600)
	if _, _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page := string(must(os.ReadFile(filepath.Join(dir, HTMLFile))))
	for _, want := range []string{
		"tool calls (the model's requests",
		"   1  Read             unknown /workspace/app.py",
		"   2  Bash&lt;script&gt;     error   pytest -q &lt;img src=x&gt;",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(page, "\x1b") || strings.Contains(page, "<img") {
		t.Error("hostile tool input reached the page unescaped")
	}
	if strings.Count(page, "tool calls (the model") != 1 {
		t.Error("tool calls shown for runs without a gateway")
	}
}
