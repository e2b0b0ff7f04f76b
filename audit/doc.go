// Package audit is `ceval audit`: it proves a task solvable and not hackable before anyone
// trusts its scores. Per task it runs, each as a command agent through supervisor.Run (the
// real sandbox, the same path as `ceval run`): the task's oracle (its solution: must reach
// SUCCESS), a null agent and an agent that hands the start back unchanged (must not), and a
// battery of generic cheats that know only what a real agent knows (must not either), and
// gives the task a verdict: ok, hackable or broken.
//
// The agents are shell scripts embedded from agents/; the package never executes agent or
// task content on the host, and never changes a task: it runs copies with another agent.
package audit
