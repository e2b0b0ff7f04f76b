package judge

import (
	"context"
	"errors"
	"strings"

	"ceval.dev/ceval/record"
)

// MaxRewriteBytes bounds a rewritten text.
const MaxRewriteBytes = 64 << 10

// Rewrite asks the model for a text (a rephrased prompt, not a verdict) within the run's
// budget, or takes the fixture's next answer; the call is recorded like a judgment, with
// the answer. The answer is trimmed; an empty one, or one over MaxRewriteBytes, is an error.
func (j *Judge) Rewrite(ctx context.Context, system, user string) (string, error) {
	api, model := j.cfg.API, j.cfg.Model
	if j.fixture != nil {
		api, model = "replay", "replay"
	}
	rec := record.JudgeCall{API: api, Model: model, InputSHA256: InputDigest(api, model, system, user, 0), Attempt: 1, System: system, User: user}
	answer, err := j.ask(ctx, system, user, "", &rec)
	if err == nil {
		rec.Answer = capText(answer, maxAnswerBytes)
		answer = strings.TrimSpace(answer)
		switch {
		case answer == "":
			err = errors.New("the model's answer is empty")
		case len(answer) > MaxRewriteBytes:
			err = errors.New("the model's answer is longer than 64 KiB")
		}
	}
	if err != nil {
		rec.Error = err.Error()
	}
	j.write(rec)
	return answer, err
}
