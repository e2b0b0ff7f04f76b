// Package grader owns success criteria, their scores and the statuses of criteria and tasks:
// it grades a task against a snapshot of the agent's workspace, reading files only through
// that snapshot and treating everything in them as hostile data. It never executes
// anything itself; criteria that run code are handed to an Executor of their tier (Tiers):
// package wasm's sandbox, or package verifier's containers for sandbox: container.
package grader
