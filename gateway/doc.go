// Package gateway is the model API as the agent sees it: an HTTP server in ceval's own
// process, reachable only inside one run's container network namespace, that speaks enough
// of the Anthropic Messages API and the OpenAI Responses API for Claude Code and Codex. It
// checks a per-run dummy key, pins the model, clamps output to the remaining budget, strips
// provider-side tools that reach the internet or run code, meters usage from what passes
// through it, and either forwards upstream with the real credential (which never leaves
// ceval) or answers from a recorded fixture. It never runs inside the agent's container.
package gateway
