// Package gateway is the model API as the agent sees it: an HTTP server in ceval's own
// process, reachable only inside one run's container network namespace, that speaks enough
// of the Anthropic Messages API and the OpenAI Responses API for Claude Code and Codex. It
// checks a per-run dummy key, pins the model, clamps output to the remaining budget, strips
// provider-side tools that reach the internet or run code, forwards only an allowlist of
// headers, fields and values (Allowlist), meters usage from what passes through it, and
// either forwards upstream with the real credential (which never leaves ceval: it is
// scrubbed from all the gateway returns and records) or answers from a recorded fixture.
// Calls that get no whole answer are counted by outcome, so the supervisor can tell the
// provider being down from what the agent provoked. It never runs inside the agent's
// container.
package gateway
