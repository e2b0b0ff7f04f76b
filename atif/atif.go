// Package atif exports a run's model gateway transcript (model_calls.jsonl) as a trajectory
// in Harbor's Agent Trajectory Interchange Format (ATIF, RFC 0001, schema ATIF-v1.7): one
// user step per prompt the model was given, one agent step per model answer with its text,
// reasoning, tool calls and the tool results the agent sent back, and the tokens and cost
// the gateway metered. Everything in the transcript is the agent's (or the model's) data:
// it is carried over verbatim as JSON strings and never interpreted.
package atif

import (
	"encoding/json"
	"fmt"
)

// SchemaVersion is the ATIF version written: the newest the RFC defines.
const SchemaVersion = "ATIF-v1.7"

// File is the trajectory's name in a run directory, beside result.json.
const File = "trajectory.json"

// Step sources.
const (
	SourceSystem = "system"
	SourceUser   = "user"
	SourceAgent  = "agent"
)

// Trajectory is the root object.
type Trajectory struct {
	SchemaVersion string         `json:"schema_version"`
	SessionID     string         `json:"session_id,omitempty"`
	TrajectoryID  string         `json:"trajectory_id,omitempty"`
	Agent         Agent          `json:"agent"`
	Steps         []Step         `json:"steps"`
	Notes         string         `json:"notes,omitempty"`
	FinalMetrics  *FinalMetrics  `json:"final_metrics,omitempty"`
	Extra         map[string]any `json:"extra,omitempty"`
}

// Agent identifies the agent system.
type Agent struct {
	Name      string         `json:"name"`
	Version   string         `json:"version"`
	ModelName string         `json:"model_name,omitempty"`
	Extra     map[string]any `json:"extra,omitempty"`
}

// Step is one system prompt, user message or agent turn (one model inference).
type Step struct {
	StepID           int            `json:"step_id"`
	Timestamp        string         `json:"timestamp,omitempty"`
	Source           string         `json:"source"`
	ModelName        string         `json:"model_name,omitempty"`
	Message          string         `json:"message"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall     `json:"tool_calls,omitempty"`
	Observation      *Observation   `json:"observation,omitempty"`
	Metrics          *Metrics       `json:"metrics,omitempty"`
	LLMCallCount     *int           `json:"llm_call_count,omitempty"`
	Extra            map[string]any `json:"extra,omitempty"`
}

// ToolCall is one tool the model asked for. Arguments is always a JSON object.
type ToolCall struct {
	ToolCallID   string          `json:"tool_call_id"`
	FunctionName string          `json:"function_name"`
	Arguments    json.RawMessage `json:"arguments"`
	Extra        map[string]any  `json:"extra,omitempty"`
}

// Observation holds the results of a step's tool calls.
type Observation struct {
	Results []ObservationResult `json:"results"`
}

// ObservationResult is one tool call's result, as the agent sent it back to the model.
type ObservationResult struct {
	SourceCallID string         `json:"source_call_id,omitempty"`
	Content      string         `json:"content"`
	Extra        map[string]any `json:"extra,omitempty"`
}

// Metrics are one model call's usage as the gateway metered it. PromptTokens counts every
// input token, cached ones included, as ATIF (and the gateway) define it.
type Metrics struct {
	PromptTokens     int64          `json:"prompt_tokens"`
	CompletionTokens int64          `json:"completion_tokens"`
	CachedTokens     int64          `json:"cached_tokens"`
	CostUSD          *float64       `json:"cost_usd,omitempty"` // absent when the model is unpriced
	Extra            map[string]any `json:"extra,omitempty"`
}

// FinalMetrics are the sums over the steps.
type FinalMetrics struct {
	TotalPromptTokens     int64          `json:"total_prompt_tokens"`
	TotalCompletionTokens int64          `json:"total_completion_tokens"`
	TotalCachedTokens     int64          `json:"total_cached_tokens"`
	TotalCostUSD          *float64       `json:"total_cost_usd,omitempty"`
	TotalSteps            int            `json:"total_steps"`
	Extra                 map[string]any `json:"extra,omitempty"`
}

// Check verifies what the JSON Schema cannot say (Harbor's validator checks it too): step
// ids run 1, 2, ... in order; only agent steps carry agent fields; every observation result
// with a source_call_id names a tool call of its own step.
func Check(t *Trajectory) error {
	if t.SchemaVersion == "" || t.Agent.Name == "" || t.Agent.Version == "" {
		return fmt.Errorf("trajectory: schema_version, agent.name and agent.version are required")
	}
	for i, s := range t.Steps {
		if s.StepID != i+1 {
			return fmt.Errorf("trajectory: steps[%d] has step_id %d, want %d (sequential from 1)", i, s.StepID, i+1)
		}
		switch s.Source {
		case SourceAgent:
		case SourceSystem, SourceUser:
			if s.ModelName != "" || s.ReasoningContent != "" || len(s.ToolCalls) > 0 || s.Metrics != nil {
				return fmt.Errorf("trajectory: step %d (%s) carries agent-only fields", s.StepID, s.Source)
			}
		default:
			return fmt.Errorf("trajectory: step %d has source %q, want system, user or agent", s.StepID, s.Source)
		}
		ids := map[string]bool{}
		for _, c := range s.ToolCalls {
			ids[c.ToolCallID] = true
		}
		if s.Observation != nil {
			for _, r := range s.Observation.Results {
				if r.SourceCallID != "" && !ids[r.SourceCallID] {
					return fmt.Errorf("trajectory: step %d: observation source_call_id %q names no tool call of the step", s.StepID, r.SourceCallID)
				}
			}
		}
	}
	return nil
}
