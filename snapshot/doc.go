// Package snapshot owns the private copy of an agent's workspace that grading reads: it
// copies regular files and directories out of an untrusted tree through openat-style,
// never-follow traversal, records symlinks as target strings, and notes everything it
// skipped or left out under its caps. It never follows a link, never creates one on disk,
// never hard-links, and never reads the live workspace after Take returns.
package snapshot
