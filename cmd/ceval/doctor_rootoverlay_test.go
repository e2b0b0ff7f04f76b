package main

import (
	"errors"
	"strings"
	"testing"
)

// On a kernel too old for the verifier's root overlay, doctor says so as a note naming the
// kernel, what is refused and the fix; otherwise ok.
func TestDoctorSaysWhenTheKernelCannotMountTheVerifiersRootOverlay(t *testing.T) {
	c := rootOverlayCheckFor(errors.New("this kernel is Linux 5.15.0-91-generic: verifier containers run as root of their own user namespace over a writable overlay of the image's root, whose idmapped layers overlayfs takes from Linux 5.19 on: upgrade the kernel, or run ceval rootless (docs/rootless.md), whose verifiers run unprivileged over the image's read-only root"))
	var b strings.Builder
	printChecks(&b, []check{c})
	for _, want := range []string{"note", "verifier root", "Linux 5.15.0-91-generic", "5.19", "refused before they start", "(fix: upgrade the kernel, or run ceval rootless"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("doctor's line lacks %q:\n%s", want, b.String())
		}
	}
	if c := rootOverlayCheckFor(nil); c.status != "ok" {
		t.Errorf("a kernel that mounts it: %+v", c)
	}
}
