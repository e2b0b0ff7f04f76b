package main

import (
	"strings"

	"ceval.dev/ceval/sandbox/local"
)

// rootOverlayCheck says whether verifier containers can run as root of their own user
// namespace over a writable overlay of the image's root (Linux 5.19 or later): on an older
// kernel, tasks with a sandbox: container criterion (other than harbor_reward and isolation:
// process) are refused before they start; the rest run.
func rootOverlayCheck() check {
	return rootOverlayCheckFor(local.CheckRootOverlayKernel())
}

func rootOverlayCheckFor(err error) check {
	if err == nil {
		return check{"verifier root", "ok", "verifier containers run as root of their own user namespace over a writable overlay of the image's root", ""}
	}
	msg, fix, _ := strings.Cut(err.Error(), ": upgrade")
	return check{"verifier root", "note", msg + "; tasks with sandbox: container criteria (other than harbor_reward and isolation: process) are refused before they start", "upgrade" + fix}
}
