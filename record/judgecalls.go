package record

import (
	"encoding/json"
	"io"
)

// JudgeCall is one line of judge_calls.jsonl: one call of an llm_judge's judge model
// (package judge writes them; report and a regrade read them).
type JudgeCall struct {
	Time         string   `json:"time"`
	API          string   `json:"api"`
	Model        string   `json:"model"`
	InputSHA256  string   `json:"input_sha256"` // of api, model, system prompt, user message and sample index
	Sample       int      `json:"sample"`
	Attempt      int      `json:"attempt"`
	Mode         string   `json:"mode"` // live | replay | reused
	Status       int      `json:"status,omitempty"`
	System       string   `json:"system,omitempty"`
	User         string   `json:"user,omitempty"`
	Answer       string   `json:"answer,omitempty"`
	Score        *float64 `json:"score,omitempty"` // set when the answer was valid
	Reasons      string   `json:"reasons,omitempty"`
	Error        string   `json:"error,omitempty"`
	InputTokens  int64    `json:"input_tokens,omitempty"`
	OutputTokens int64    `json:"output_tokens,omitempty"`
	CostUSD      float64  `json:"cost_usd,omitempty"`
	DurationMS   float64  `json:"duration_ms"`
}

// ReadJudgeCalls reads judge_calls.jsonl; a missing file has none. Lines that do not parse
// are skipped: a recorded judgment is only a shortcut.
func ReadJudgeCalls(r io.Reader) []JudgeCall {
	var out []JudgeCall
	dec := json.NewDecoder(io.LimitReader(r, 256<<20))
	for {
		var rec JudgeCall
		if err := dec.Decode(&rec); err != nil {
			return out
		}
		out = append(out, rec)
	}
}
