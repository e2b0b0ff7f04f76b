// Package oci turns a sandbox Config into the OCI runtime spec of an agent container: user
// 2000:2000 in a user namespace of the run's own (IDs 0-65535 mapped to the run's host
// range; the caller makes the namespace), with every capability set empty, no_new_privs, the default seccomp profile,
// pids/memory/cpu limits, a read-only rootfs with only the workspace, the home directory and
// capped tmpfs writable, and no network unless asked. Each hardening knob is one containerd
// oci.SpecOpts, unit-tested by the spec it produces, plus a golden JSON of the whole spec.
// It is pure: it never talks to containerd and reads nothing from the host.
package oci
