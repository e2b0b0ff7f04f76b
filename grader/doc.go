// Package grader owns success criteria and their scores: it grades a task against a snapshot
// of the agent's workspace and fills the run record's grade (record.Grade, named Result
// here, with the statuses of criteria and tasks), reading files only through that snapshot
// and treating everything in them as hostile data. It never executes anything itself;
// criteria that run code are handed to an Executor of their tier (Tiers): package wasm's
// sandbox, or package verifier's containers for sandbox: container.
package grader
