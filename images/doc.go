// Package images owns the container images ceval runs agents in: it builds the default
// busybox image without a registry, Debian package images with mmdebstrap (cached on disk
// by their resolved inputs) and Dockerfile images with buildah, imports OCI and docker-save
// archives, writes the init image a Kubernetes Pod installs ceval-init from, and preflights
// an image (isolation label, setuid/setgid files, file capabilities, the agent's passwd
// entry) before a run may use it; Resolve, ResolvePinned and ResolveSandbox give a run or a
// verifier criterion its image, present, pinned and preflighted; a Harbor-imported task's
// missing image gets the import's build command back (HarborBuildHint, from the task's own
// environment/Dockerfile and docker-compose.yaml). It pulls and pushes registry
// images through containerd's own client (package registry configures it), bounding everything
// a registry sends, exports OCI archives, and lists and prunes what it keeps (images in
// containerd, the on-disk image cache). It never runs agents.
package images
