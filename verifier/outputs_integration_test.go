package verifier

import (
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/snapshot"
)

// A verifier sees the agent's sandbox.outputs at the same container paths, as copies it may
// write (a /tmp output is its /tmp), while a link the agent planted stays a link.
func TestVerifierSeesTheOutputsAtTheirPaths(t *testing.T) {
	e, _, ctx := newExecutor(t)
	s := snap(t, map[string]string{"ws.txt": "ws\n"})
	s.Outputs = []snapshot.Output{
		{Path: "/output", Snapshot: snap(t, map[string]string{"x.txt": "answer 9c2\n"})},
		{Path: "/tmp", Snapshot: snap(t, map[string]string{"y.txt": "tmp answer\n"})},
	}
	c := container(`cat /output/x.txt /tmp/y.txt ws.txt; mkdir -p /tmp/logs/verifier && echo 1 > /tmp/logs/verifier/reward.txt && cat /tmp/logs/verifier/reward.txt; ls -ld /output | cut -c1-10`)
	r, err := e.Run(ctx, c, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.Stdout); !strings.HasPrefix(got, "answer 9c2\ntmp answer\nws\n1\n") || r.ExitCode != 0 {
		t.Errorf("stdout %q exit %d (stderr %q): want the outputs at /output and /tmp", got, r.ExitCode, r.Stderr)
	}
}

// The verifier's container gets its image's ENV too (Terminal-Bench tests call tools the
// image puts on PATH), under ceval's own variables.
func TestVerifierGetsItsImagesEnv(t *testing.T) {
	e, c, ctx := newExecutor(t)
	const img = "ceval.local/verifier-image-env:test"
	if _, err := images.BuildDefault(ctx, c, images.DefaultOptions{Name: img,
		Env:   []string{"PATH=/opt/tools:/usr/bin:/bin", "GREETING=from the image", "HOME=/root"},
		Extra: []images.File{{Path: "opt/tools/checker", Mode: 0o755, Data: []byte("#!/bin/sh\necho checker-ran\n")}},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, img) })
	cr := container(`checker; echo "$GREETING|$HOME"`)
	cr.Verifier().Image = img
	r, err := e.Run(ctx, cr, snap(t, map[string]string{"a": "a"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.Stdout); got != "checker-ran\nfrom the image|/home/agent\n" {
		t.Errorf("stdout %q (stderr %q), want the image's PATH and GREETING under ceval's HOME", got, r.Stderr)
	}
}
