// Package launcher is ceval's only containerd client: it connects, creates containers and
// tasks under leases, streams their IO to capped files, kills and deletes them on every
// path, and reads their resource metrics. It runs what it is given and decides no policy:
// the spec comes from package oci and the lifecycle from package supervisor.
package launcher
