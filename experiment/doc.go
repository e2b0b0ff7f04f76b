// Package experiment owns an experiment: its plan (plan.json), the bounded pool that runs
// every (variant, task, repeat) through supervisor.Run with retries of runs that failed
// before their agent started, resume, stop_early's sequential test, the prompt mutations
// that rephrase prompts before the plan (prompts.json), and regrading saved runs. It never
// runs a container itself: each run is supervisor's.
package experiment
