// Package local is the local containerd backend of package sandbox (Backend: images resolved
// in containerd, ID slots prepared, the verifier's root overlay checked against the kernel):
// an agent's container on this host (NewSandbox, Sandbox), with its capped scratch filesystems, the workspace
// started from the image's working directory or a template (CopyTree, with its repositories
// rebuilt to HEAD's history), the image's environment as ceval applies it, setup steps in
// containers of their own (RunStep), and the isolation attested from /proc (ReadAttestation,
// CheckAttestation). It owns the host resources a run takes: ID slots of the ID range, each
// with the holder of its user namespace (StartIDs, AllocateIDs, GC of a gone ceval's), the
// rootless mode (EnterRootless, process-wide), and a verifier's writable root overlay.
package local
