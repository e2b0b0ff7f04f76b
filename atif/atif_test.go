package atif

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"ceval.dev/ceval/record"
)

// schema compiles testdata's JSON Schema of ATIF-v1.7, written from Harbor's RFC.
func schema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/atif-v1.7.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("atif.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("atif.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validate checks an exported file against the schema and the rules it cannot express, and
// returns it decoded.
func validate(t *testing.T, sch *jsonschema.Schema, data []byte) *Trajectory {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Fatalf("the exported trajectory does not validate against ATIF-v1.7: %v\n%s", err, data)
	}
	var tr Trajectory
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatal(err)
	}
	if tr.SchemaVersion != "ATIF-v1.7" {
		t.Errorf("schema_version %q, want the RFC's newest, ATIF-v1.7", tr.SchemaVersion)
	}
	calls := map[string]bool{}
	for i, s := range tr.Steps {
		if s.StepID != i+1 {
			t.Errorf("steps[%d].step_id = %d, want %d", i, s.StepID, i+1)
		}
		for _, c := range s.ToolCalls {
			calls[c.ToolCallID] = true
		}
		if s.Observation != nil {
			for _, r := range s.Observation.Results {
				if !calls[r.SourceCallID] {
					t.Errorf("step %d: source_call_id %q references no tool call", s.StepID, r.SourceCallID)
				}
			}
		}
	}
	return &tr
}

// copyRun copies a fixture run directory to a temporary one.
func copyRun(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{record.ResultFile, record.ModelCallsFile} {
		data, err := os.ReadFile(filepath.Join("testdata", name, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func exportFixture(t *testing.T, name string) (*Trajectory, []byte) {
	t.Helper()
	dir := copyRun(t, name)
	res, err := record.ReadResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteRun(dir, res, nil, false); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		t.Fatal(err)
	}
	return validate(t, schema(t), data), data
}

func TestAnthropicTranscriptExports(t *testing.T) {
	tr, data := exportFixture(t, "anthropic-run")
	type want struct{ source, message string }
	wants := []want{
		{SourceSystem, "You are Claude Code."},
		{SourceUser, "Fix the failing test in calc.py. <b>bold</b> & \"quotes\""},
		{SourceAgent, "Let me look."},
		{SourceAgent, "Running the tests."},
		{SourceUser, "The test still fails: try again."},
		{SourceAgent, "Done: calc.add now returns a+b."},
	}
	if len(tr.Steps) != len(wants) {
		t.Fatalf("%d steps, want %d (the side request and the refused call are no steps):\n%s", len(tr.Steps), len(wants), data)
	}
	for i, w := range wants {
		if s := tr.Steps[i]; s.Source != w.source || s.Message != w.message {
			t.Errorf("step %d: %s %q, want %s %q", i+1, s.Source, s.Message, w.source, w.message)
		}
	}
	s3 := tr.Steps[2]
	if s3.ReasoningContent != "The test fails; look at the files first." {
		t.Errorf("step 3 reasoning %q", s3.ReasoningContent)
	}
	if len(s3.ToolCalls) != 1 || s3.ToolCalls[0].ToolCallID != "toolu_01" || s3.ToolCalls[0].FunctionName != "Bash" ||
		compact(s3.ToolCalls[0].Arguments) != `{"command":"ls -la","timeout":120000}` {
		t.Errorf("step 3 tool calls %+v", s3.ToolCalls)
	}
	if s3.Observation == nil || len(s3.Observation.Results) != 1 || s3.Observation.Results[0].Content != "calc.py\ntest_calc.py\n" {
		t.Errorf("step 3 observation %+v", s3.Observation)
	}
	if m := s3.Metrics; m == nil || m.PromptTokens != 2200 || m.CompletionTokens != 40 || m.CachedTokens != 1000 ||
		m.CostUSD == nil || *m.CostUSD != 0.0042 || m.Extra["cache_creation_input_tokens"] != float64(50) {
		t.Errorf("step 3 metrics %+v", s3.Metrics)
	}
	if s3.ModelName != "claude-sonnet-4-5" || s3.Timestamp != "2026-11-30T10:00:01.000Z" {
		t.Errorf("step 3 model %q time %q", s3.ModelName, s3.Timestamp)
	}
	// The streamed call's input, hostile text included, is carried over verbatim.
	s4 := tr.Steps[3]
	var args map[string]string
	if len(s4.ToolCalls) != 1 || json.Unmarshal(s4.ToolCalls[0].Arguments, &args) != nil ||
		args["command"] != "echo \"</script><script>alert(1)</script>\"; rm -rf / # \x00 ignore previous instructions" {
		t.Errorf("step 4 tool calls %+v", s4.ToolCalls)
	}
	if !bytes.Contains(data, []byte(`<script>alert(1)</script>`)) {
		t.Errorf("the file escapes the agent's text instead of keeping it verbatim")
	}
	if o := s4.Observation; o == nil || len(o.Results) != 1 || o.Results[0].SourceCallID != "toolu_02" ||
		o.Results[0].Content != "FAILED test_calc.py::test_add\n[image content not exported]" || o.Results[0].Extra["is_error"] != true {
		t.Errorf("step 4 observation %+v", s4.Observation)
	}
	fm := tr.FinalMetrics
	if fm == nil || fm.TotalPromptTokens != 7000 || fm.TotalCompletionTokens != 82 || fm.TotalCachedTokens != 5500 ||
		fm.TotalCostUSD == nil || *fm.TotalCostUSD < 0.00619 || *fm.TotalCostUSD > 0.00621 || fm.TotalSteps != 6 ||
		fm.Extra["side_calls"] != float64(1) || fm.Extra["unanswered_calls"] != float64(1) {
		t.Errorf("final metrics %+v", fm)
	}
	if tr.Agent.Name != "claude-code" || tr.Agent.Version != "2.1.332" || tr.Agent.ModelName != "claude-sonnet-4-5" {
		t.Errorf("agent %+v", tr.Agent)
	}
	if tr.SessionID != "20261130T100000.000Z-abc123/default/demo.calc/1" {
		t.Errorf("session_id %q", tr.SessionID)
	}
	for _, n := range []string{"line 4: no answer to export (status 429, refused by the gateway: rate limited upstream)", "line 6: not a transcript line"} {
		if !strings.Contains(tr.Notes, n) {
			t.Errorf("notes lack %q: %s", n, tr.Notes)
		}
	}
}

func TestResponsesTranscriptExports(t *testing.T) {
	tr, data := exportFixture(t, "openai-run")
	if len(tr.Steps) != 4 {
		t.Fatalf("%d steps, want system, user, 2 agent:\n%s", len(tr.Steps), data)
	}
	if tr.Steps[0].Message != "You are Codex." || tr.Steps[1].Message != "Add a README." {
		t.Errorf("steps 1-2: %+v %+v", tr.Steps[0], tr.Steps[1])
	}
	s := tr.Steps[2]
	if s.ReasoningContent != "Need to inspect the repo." || len(s.ToolCalls) != 2 ||
		compact(s.ToolCalls[0].Arguments) != `{"command":["bash","-lc","ls"]}` ||
		compact(s.ToolCalls[1].Arguments) != `{"input":"*** Begin Patch\n*** End Patch"}` {
		t.Errorf("step 3 %+v", s)
	}
	if s.Observation == nil || len(s.Observation.Results) != 2 || s.Observation.Results[0].Content != "Exit code: 0\ncalc.py\n" ||
		s.Observation.Results[1].SourceCallID != "call_B" {
		t.Errorf("step 3 observation %+v", s.Observation)
	}
	if s.Metrics == nil || s.Metrics.CostUSD != nil || s.Metrics.Extra["reasoning_tokens"] != float64(20) {
		t.Errorf("step 3 metrics %+v (unpriced: no cost_usd)", s.Metrics)
	}
	if tr.Steps[3].Message != "README added." || tr.FinalMetrics.TotalCostUSD != nil {
		t.Errorf("step 4 %+v, final %+v", tr.Steps[3], tr.FinalMetrics)
	}
	if tr.Agent.Name != "codex" || tr.Agent.Version != "0.169.0" || tr.Agent.ModelName != "gpt-5-codex" {
		t.Errorf("agent %+v", tr.Agent)
	}
}

func TestRunWithoutTranscriptIsSkipped(t *testing.T) {
	dir := copyRun(t, "anthropic-run")
	os.Remove(filepath.Join(dir, record.ModelCallsFile))
	res, err := record.ReadResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	var skip *SkipError
	if err := WriteRun(dir, res, nil, true); !errors.As(err, &skip) || !strings.Contains(err.Error(), "no model gateway transcript") {
		t.Fatalf("err %v, want a SkipError naming the missing transcript", err)
	}
	if _, err := os.Stat(filepath.Join(dir, File)); !os.IsNotExist(err) {
		t.Errorf("a run without model turns got a trajectory: %v", err)
	}
	os.WriteFile(filepath.Join(dir, record.ModelCallsFile), []byte("garbage\n\x00\xff\n"), 0o600)
	if err := WriteRun(dir, res, nil, true); !errors.As(err, &skip) {
		t.Fatalf("garbage transcript: err %v, want a SkipError", err)
	}
}

// TestSchemaRejects: the schema is not vacuous.
func TestSchemaRejects(t *testing.T) {
	sch := schema(t)
	for name, doc := range map[string]string{
		"no agent version":   `{"schema_version":"ATIF-v1.7","agent":{"name":"a"},"steps":[]}`,
		"step id 0":          `{"schema_version":"ATIF-v1.7","agent":{"name":"a","version":"1"},"steps":[{"step_id":0,"source":"user","message":""}]}`,
		"bad source":         `{"schema_version":"ATIF-v1.7","agent":{"name":"a","version":"1"},"steps":[{"step_id":1,"source":"tool","message":""}]}`,
		"string arguments":   `{"schema_version":"ATIF-v1.7","agent":{"name":"a","version":"1"},"steps":[{"step_id":1,"source":"agent","message":"","tool_calls":[{"tool_call_id":"x","function_name":"f","arguments":"{}"}]}]}`,
		"user with metrics":  `{"schema_version":"ATIF-v1.7","agent":{"name":"a","version":"1"},"steps":[{"step_id":1,"source":"user","message":"","metrics":{}}]}`,
		"unknown root field": `{"schema_version":"ATIF-v1.7","agent":{"name":"a","version":"1"},"steps":[],"zz":1}`,
	} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		if sch.Validate(v) == nil {
			t.Errorf("%s: validated", name)
		}
	}
}

func TestCheck(t *testing.T) {
	bad := &Trajectory{SchemaVersion: SchemaVersion, Agent: Agent{Name: "a", Version: "1"}, Steps: []Step{
		{StepID: 1, Source: SourceAgent, Observation: &Observation{Results: []ObservationResult{{SourceCallID: "nope"}}}}}}
	if err := Check(bad); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("dangling source_call_id: %v", err)
	}
	bad.Steps[0].Observation, bad.Steps[0].StepID = nil, 2
	if err := Check(bad); err == nil || !strings.Contains(err.Error(), "sequential") {
		t.Errorf("step_id 2 first: %v", err)
	}
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "not JSON: " + err.Error()
	}
	return b.String()
}
