// Package experiment owns an experiment: its plan (plan.json, with the images pinned before
// the first run), every entry checked up front (supervisor.Check) before the bounded pool
// that runs every (variant, task, repeat), -j auto's concurrency read from the host, the
// next runs prepared ahead of their turn (supervisor.Prepare: warm sandboxes) while others
// execute, retries of runs that failed before their agent started, resume, stop_early's
// sequential test, the prompt mutations that rephrase prompts before the plan
// (prompts.json), and regrading saved runs (each through supervisor.RegradeRun). It never
// runs a container itself: each run is supervisor's.
package experiment
