// Package launcher is ceval's only containerd client: it connects, creates containers and
// tasks under leases, streams their IO to capped files, kills and deletes them on every
// path, and reads their resource metrics. It runs what it is given and decides no policy:
// the spec comes from package oci and the lifecycle from package supervisor.
//
// One run is Create (container + rootfs snapshot under a lease that expires on its own),
// Container.Start (task with stdout/stderr into capped files; a hook sees PID 1 before it
// runs), Task.Wait (deadline, SIGTERM, grace, SIGKILL to all, cgroup verified empty, task
// deleted so output is complete), and Container.Delete with a context the run's cancel does
// not reach (CleanupContext). MountScratch and ChownTree prepare the host directories the
// container gets as /workspace and /home/agent.
//
// There is deliberately no Exec: an exec'd process gets whatever capabilities and user its
// own process spec asks for, outside the hardening of the container's spec, so the agent's
// container offers no such path.
package launcher
