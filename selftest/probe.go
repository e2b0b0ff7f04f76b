package selftest

import (
	"context"
	"fmt"
	"os"

	"github.com/containerd/containerd/v2/client"
	ctrimages "github.com/containerd/containerd/v2/core/images"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/embedded"
)

// probeImagePlaceholder in an attack's task.yaml becomes ProbeImage(): the attack runs
// ceval-probe or bash, which the default image lacks.
const probeImagePlaceholder = "{{PROBE_IMAGE}}"

// ProbeImage names the image of the kernel-syscalls and verifier-harbor-reward attacks: the
// default image plus /usr/local/bin/ceval-probe and Debian's bash-static as /bin/bash,
// named by the probe's digest. Run builds it when an attack
// needs it and deletes it when done.
func ProbeImage() string { return "ceval.local/selftest-probe:" + embedded.Probe.SHA256()[:12] }

// probeImage builds ProbeImage at most once per Run, on the first attack that needs it.
type probeImage struct {
	c       *client.Client
	busybox string
	built   bool
	err     error
}

// ensure builds the image (replacing one of the same name) unless this run already did.
func (p *probeImage) ensure(ctx context.Context) error {
	if !p.built && p.err == nil {
		bash, err := os.ReadFile(images.BashStatic)
		if err == nil {
			_, err = images.BuildDefault(ctx, p.c, images.DefaultOptions{
				Busybox: p.busybox,
				Name:    ProbeImage(),
				Extra: []images.File{{Path: "usr/local/bin/ceval-probe", Mode: 0o755, Data: embedded.Probe.Bytes()},
					{Path: "bin/bash", Mode: 0o755, Data: bash}},
			})
		} else {
			err = fmt.Errorf("%w (the probe image's bash: apt-get install bash-static)", err)
		}
		if err != nil {
			p.err = fmt.Errorf("building the probe image %s: %w", ProbeImage(), err)
		} else {
			p.built = true
		}
	}
	return p.err
}

// remove deletes the image if this run built it, synchronously, so containerd's garbage
// collector takes its content and snapshots with it.
func (p *probeImage) remove(ctx context.Context) {
	if p.built {
		_ = p.c.ImageService().Delete(context.WithoutCancel(ctx), ProbeImage(), ctrimages.SynchronousDelete())
	}
}
