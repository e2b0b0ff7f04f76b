package supervisor

import (
	"fmt"
	"os"
	"path/filepath"

	"ceval.dev/ceval/judge"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// JudgeCallsFile is the record of a run's llm_judge calls in its run directory.
const JudgeCallsFile = "judge_calls.jsonl"

// runJudge returns the judge of one run, logging to JudgeCallsFile in dir, and a function
// that closes the log; nil when the task has no llm_judge. base is the user's configured
// judge (nil: fixtures only). With reuse, the judgments already recorded there are reused
// when their inputs are byte-identical (regrade), and new records are appended.
func runJudge(t *task.Task, dir string, base *judge.Judge, reuse bool) (*judge.Judge, func(), error) {
	need := false
	for _, c := range t.Criteria {
		_, judged := c.Spec.(*task.LLMJudgeSpec)
		need = need || judged
	}
	if !need {
		return nil, func() {}, nil
	}
	if base == nil {
		base = judge.NewReplay(nil, nil)
	}
	p := filepath.Join(dir, JudgeCallsFile)
	var recorded []record.JudgeCall
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if reuse {
		if f, err := os.Open(p); err == nil {
			recorded = record.ReadJudgeCalls(f)
			f.Close()
		}
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(p, flags, 0o600)
	if err != nil {
		return nil, nil, err
	}
	return base.ForRun(f, recorded), func() { f.Close() }, nil
}

// CheckJudge refuses, before the agent runs, a task whose llm_judge criteria need a judge
// model (no judge_fixture) when ceval's config has none or its key is not set: the run
// would be spent and its judged criteria ERROR.
func CheckJudge(t *task.Task, j *judge.Judge) error {
	for i, c := range t.Criteria {
		if s, ok := c.Spec.(*task.LLMJudgeSpec); !ok || s.JudgeAnswers != nil {
			continue
		}
		if j == nil {
			return fmt.Errorf("task %s: success_criteria[%d] (llm_judge) asks a judge model, and ceval's config has none: add "+
				"judge: {api: anthropic, model: ...} to the config file (--config; default ~/.config/ceval/config.yaml), or give the criterion a judge_fixture", t.ID, i)
		}
		if err := j.Ready(); err != nil {
			return fmt.Errorf("task %s: success_criteria[%d] (llm_judge): %w", t.ID, i, err)
		}
	}
	return nil
}
