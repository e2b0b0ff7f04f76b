package main

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/client"
	ctrimages "github.com/containerd/containerd/v2/core/images"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/internal/embedded"
	"ceval.dev/ceval/internal/kubetest"
	"ceval.dev/ceval/internal/regtest"
)

// The wrong-digest case on a real node: the node's containerd holds other content under the
// init image's pinned name REPO@DIGEST (here an init image whose ceval-init is this ceval's
// plus one byte: it runs exactly as well). The kubelet reports the pinned digest as the
// container's imageID, so the imageID check passes; the init's hash of its own executable
// does not, and the run is refused before the agent starts, leaving no Pod. Red without
// checkInitExe: the run succeeds on the other init.
func TestKubeNodeHoldingAnotherInitUnderThePinnedNameIsRefused(t *testing.T) {
	c, ns, cfg, prefix := kubeRegistrySetup(t)
	cl, ctx := ctrtest.Connect(t)
	marker := path.Base(prefix)
	// Images of the test's own (see kubePushImagesOfTheirOwn): what the node pulls with the
	// test's Secret must not be another test's imported image.
	initName, agent := kubePushImagesOfTheirOwn(t, ctx, cl, marker)
	other := images.InitRepo + ":t-" + marker + "-other"
	regtest.DeriveImageWithFile(t, ctx, cl, images.InitName(), other, strings.TrimPrefix(images.InitBinaryPath, "/"), 0o555,
		append(append([]byte{}, embedded.Init.Bytes()...), '\n'), "another ceval-init")
	if err := appendFile(cfg, "  init_image: "+initName+"\n"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tk := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(tk, []byte("task_id: kube-init-exe\ninitial_prompt: p\nagent: {type: command, command: [sh, -c, 'echo ok > out.txt']}\n"+
		"sandbox: {image: "+agent+", limits: {timeout: 60s}}\nsuccess_criteria: [{type: file_exists, path: out.txt}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		node, nctx := kubetest.NodeContainerd(t)
		for _, n := range nodeImagesUnder(t, prefix) {
			_ = node.ImageService().Delete(nctx, n, ctrimages.SynchronousDelete())
		}
	})
	r := ceval(t, "images", "push", "--kubernetes", "--config", cfg, "--namespace", ctrtest.Namespace, tk)
	if r.code != 0 {
		t.Fatalf("images push --kubernetes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var initPinned string
	for _, m := range pushedLine.FindAllStringSubmatch(r.stdout, -1) {
		if m[1] == initName {
			initPinned = m[3]
		}
	}
	if initPinned == "" {
		t.Fatalf("the init image %s was not pushed:\n%s", initName, r.stdout)
	}
	otherRef := prefix + "/other-init:1"
	if r := ceval(t, "images", "push", "--config", cfg, "--namespace", ctrtest.Namespace, other, otherRef); r.code != 0 {
		t.Fatalf("images push %s: exit %d\n%s%s", other, r.code, r.stdout, r.stderr)
	}

	// The node pulls the other init (unpacked, as the kubelet's pull would leave it), and
	// its containerd names it as the pinned init.
	ro, _ := regtest.Registry(t)
	res, err := ro.Resolver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node, nctx := kubetest.NodeContainerd(t)
	img, err := node.Pull(nctx, otherRef, client.WithResolver(res), client.WithPullUnpack, client.WithPullSnapshotter("overlayfs"))
	if err != nil {
		t.Fatalf("the node's pull of %s: %v", otherRef, err)
	}
	if _, err := node.ImageService().Create(nctx, ctrimages.Image{Name: initPinned, Target: img.Target()}); err != nil {
		t.Fatal(err)
	}

	runs := t.TempDir()
	r = ceval(t, "run", "--config", cfg, "--runs-dir", runs, tk)
	out := r.stdout + r.stderr
	res1 := readOneResult(t, runs)
	if res1.Status == "SUCCESS" || r.code == 0 {
		t.Fatalf("a run on another init under the pinned name %s: %s, exit %d\n%s", initPinned, res1.Status, r.code, out)
	}
	if !strings.Contains(out+res1.Error, "is not this ceval's ceval-init") {
		t.Errorf("the refusal does not say the init is not this ceval's: %s %q\n%s", res1.Status, res1.Error, out)
	}
	if err := kubetest.Leftovers(context.Background(), c, ns); err != nil {
		t.Errorf("left after the refused run: %v", err)
	}
}
