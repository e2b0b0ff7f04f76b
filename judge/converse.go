package judge

import (
	"context"
	"time"

	"ceval.dev/ceval/record"
)

// Converse asks the model for a free-form answer (the simulated user's next message, say)
// within the run's budget, from the fixture when the judge has one, and records the call in
// the judge's log like a judgment (with no score). An error is a failure on ceval's side.
func (j *Judge) Converse(ctx context.Context, system, user string) (string, error) {
	api, model := j.cfg.API, j.cfg.Model
	if j.fixture != nil {
		api, model = "replay", "replay"
	}
	rec := record.JudgeCall{API: api, Model: model, InputSHA256: InputDigest(api, model, system, user, 0), Attempt: 1, System: system, User: user}
	answer, err := j.ask(ctx, system, user, "", &rec)
	if err != nil {
		rec.Error = err.Error()
		j.write(rec)
		return "", err
	}
	rec.Answer = capText(answer, maxAnswerBytes)
	rec.Time = time.Now().UTC().Format(time.RFC3339Nano)
	j.write(rec)
	return answer, nil
}
