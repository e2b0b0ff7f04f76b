package local

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/task"
)

// The verifier's root overlay (mountRootOverlay) idmaps the image's layers into the
// container's user namespace and mounts overlayfs over them: overlayfs accepts idmapped
// layers since Linux 5.19. On an older kernel the mount fails when the first verifier
// container starts, after the agent ran; CheckRootVerifier says so before anything starts.

// rootOverlayKernel is the first Linux release whose overlayfs takes idmapped layers.
var rootOverlayKernel = [2]int{5, 19}

// CheckRootOverlayKernel fails, saying what to do, when verifiers would run as root of their
// user namespace (RootVerifierSupported) on a kernel older than 5.19.
func CheckRootOverlayKernel() error {
	if !RootVerifierSupported() {
		return nil // rootless: verifiers run unprivileged over the image's read-only root
	}
	return checkRootOverlayKernel(kernelRelease())
}

// kernelRelease is uname's release ("" when it cannot tell: the mount itself will say); a
// variable for tests.
var kernelRelease = func() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// checkRootOverlayKernel is CheckRootOverlayKernel for a kernel release ("5.15.0-91-generic");
// one it cannot read passes.
func checkRootOverlayKernel(release string) error {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return nil
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return nil
	}
	if major > rootOverlayKernel[0] || major == rootOverlayKernel[0] && minor >= rootOverlayKernel[1] {
		return nil
	}
	return fmt.Errorf("this kernel is Linux %s: verifier containers run as root of their own user namespace over a writable overlay of the image's root, whose idmapped layers overlayfs takes from Linux %d.%d on: upgrade the kernel, or run ceval rootless (docs/rootless.md), whose verifiers run unprivileged over the image's read-only root",
		release, rootOverlayKernel[0], rootOverlayKernel[1])
}

// CheckRootVerifier is CheckRootOverlayKernel for a task that has a criterion run by the
// verifier's root (sandbox: container, other than harbor_reward and isolation: process, which
// run unprivileged): nil for a task with none.
func CheckRootVerifier(t *task.Task) error {
	for i := range t.Criteria {
		if c := &t.Criteria[i]; c.Verifier() != nil && !c.SharesNoPrivilegeWithItsTests() {
			if err := CheckRootOverlayKernel(); err != nil {
				return fmt.Errorf("criterion %d (%s, sandbox: container): %w", i+1, c.Type, err)
			}
			return nil
		}
	}
	return nil
}
