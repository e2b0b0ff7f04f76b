// Package judge asks a model for a verdict on an agent's work: ceval's own call from the
// host, with the judge model and key of the user's config (never a task's), a per-run
// budget, every call recorded (judge_calls.jsonl), replay from a fixture, and reuse of a
// recorded verdict when the judge's inputs are byte-identical. Workspace content reaches
// the judge only as quoted data inside delimiters the content cannot forge, and only a
// strict JSON answer counts. It imports nothing of ceval's.
package judge
