// Package toolcalls reads the tool calls an agent's model asked for out of the model
// gateway's transcript (model_calls.jsonl): the calls come from the answers the provider
// sent through ceval's gateway, never from anything the agent wrote on its own, and their
// outcomes from the tool results the agent sent back. It parses hostile input: every line,
// name, field and count is capped, and nothing in a transcript can make reading it fail.
// It imports only gateway/transcript (the transcript's format), so the grader and the report
// use it without the gateway's server.
package toolcalls
