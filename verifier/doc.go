// Package verifier runs the criteria that need a real toolchain (sandbox: container) in a
// fresh hardened container per criterion, after the agent's container is gone: the image
// pristine from containerd, the agent's hardening (no_new_privs, seccomp, limits, a user
// namespace of its own) as root of that namespace over a writable, capped copy of the
// image's root (or the grader's UID over the read-only root where that is not possible),
// over a fresh capped copy of the snapshot, with no gateway, mocks or credentials. The
// result is the command's exit code and capped output, read once every process is killed
// and the cgroup is verified empty. It runs in the local backend's sandbox (sandbox/local),
// never through a run's orchestrator (supervisor), and never decides a score itself
// (grader.ScoreCommand does).
package verifier
