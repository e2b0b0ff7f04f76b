// Package launcher is ceval's containerd client for the containers of a run (the agent's, its
// steps', its services' and the verifiers'): it connects, creates containers and tasks under
// leases, streams their IO to capped files, kills and deletes them on every path, reads their
// resource metrics, and removes what a dead ceval left (GC). Around them it owns the host-side
// mechanisms a container needs: capped scratch tmpfs (MountScratch), a verifier's writable root
// over the image's idmapped layers (MountRootOverlay), the supervisor's lifeline FIFO, listening
// and dialling inside a container's network namespace, and a rootless daemon's detection, ID
// slices and limit modes. It runs what it is given and decides no policy: the spec comes from
// package oci, the lifecycle from its callers (supervisor, verifier).
//
// One run is Create (container + rootfs snapshot under a lease that expires on its own),
// Container.Start (task with stdout/stderr into capped files; a hook sees PID 1 before it
// runs), Task.Wait (deadline, SIGTERM, grace, SIGKILL to all, cgroup verified empty, output
// complete; the task's deletion overlaps what the caller does next), and Container.Delete
// (which waits for that deletion) with a context the run's cancel does not reach
// (CleanupContext). MountScratch and ChownTree prepare the host directories the
// container gets as /workspace and /home/agent.
//
// Rationale for the per-run user namespaces (NewUserNS, LowerRlimits, the mount points made
// in Create), decisions a newcomer will question:
//   - ceval makes the namespace, not runc: the kernel charges per-user counts of everything in
//     a namespace (inotify instances, message-queue bytes) also to the namespace's owner in
//     the parent, and runc's would be root's, so every run would share root's quota (measured:
//     the second of two runs got 0 of 128 inotify instances). Owned by the run's own first
//     host ID, each run has its own. Go cannot make it (unshare(CLONE_NEWUSER) refuses a
//     threaded caller, and os/exec clones before it sets the child's UID): util-linux does.
//   - the rlimits are lowered from outside as the agent's own host ID: runc's prlimit of a
//     spec's rlimits needs CAP_SYS_RESOURCE over a namespace root does not own, which root
//     lacks where its own capability sets do (as on the machines this was measured on).
//   - missing mount points are made in the rootfs snapshot as the host's root: runc, as the
//     namespace's root, owns nothing in an image's rootfs and cannot mkdir there.
//
// Rootless (rootless.go, netns_rootless.go, delegate.go): RootlessDaemon finds a containerd
// inside rootlesskit and does the steps that need its privileges through nsenter into its
// namespaces (capped scratch mounts; ListenInNetns for the gateway and mocks). Limits hold by a
// cgroup subtree root delegated to the user (SetupDelegatedCgroup) or, only when the user
// allowed it, by rlimits (RootlessLimits says which, per limit). WithRootlessRunIDs gives each
// run its own 65536-ID slice of the user's subordinate range; runc makes that namespace, so
// unlike the rootful one it is owned by the user, and the per-owner counts (inotify instances,
// message-queue bytes) are shared by the user's concurrent runs.
//
// Exec is narrow on purpose: an exec'd process gets whatever capabilities and user its own
// process spec asks for, outside the hardening of the container's spec, so no method takes a
// process spec. Task.Exec (a task service's readiness probe) reuses the container's own
// process settings and refuses a container whose process has a capability or lacks
// no_new_privs; ceval never execs into the agent's container.
package launcher
