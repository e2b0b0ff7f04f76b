package judge

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"ceval.dev/ceval/record"
)

// TestConverseAsksTheModelAndRecordsTheCall: a live call sends the system prompt and user
// message, returns the answer text as it is, and logs a record with no score and no key;
// the run's budget applies; a fixture answers in order with no model.
func TestConverseAsksTheModelAndRecordsTheCall(t *testing.T) {
	for _, api := range []string{Anthropic, OpenAI} {
		f, cfg := start(t, api, `{"done": false, "prompt": "now add tests"}`, "second")
		cfg.MaxCalls = 1
		var log bytes.Buffer
		j := New(cfg, &log, nil)
		got, err := j.Converse(context.Background(), "play the user", "the agent said hi")
		if err != nil || got != `{"done": false, "prompt": "now add tests"}` {
			t.Fatalf("%s: %q %v", api, got, err)
		}
		if um := f.userMessages(); len(um) != 1 || um[0] != "the agent said hi" {
			t.Fatalf("%s: user messages %q", api, um)
		}
		recs := record.ReadJudgeCalls(&log)
		if len(recs) != 1 || recs[0].Mode != "live" || recs[0].Score != nil || recs[0].System != "play the user" || recs[0].Answer != got {
			t.Fatalf("%s: records %+v", api, recs)
		}
		if strings.Contains(log.String(), cfg.Key) {
			t.Fatalf("%s: the key is in the log", api)
		}
		if _, err := j.Converse(context.Background(), "s", "u"); !errors.Is(err, ErrBudget) {
			t.Fatalf("%s: over budget: %v", api, err)
		}
	}
	j := NewReplay(nil, nil).WithFixture(&Fixture{Answers: []string{"one"}})
	if got, err := j.Converse(context.Background(), "s", "u"); err != nil || got != "one" {
		t.Fatalf("fixture: %q %v", got, err)
	}
	if _, err := j.Converse(context.Background(), "s", "u"); err == nil {
		t.Fatal("the fixture has no answer left, and Converse did not say so")
	}
}
