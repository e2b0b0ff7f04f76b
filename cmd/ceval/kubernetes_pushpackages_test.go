package main

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ctrimages "github.com/containerd/containerd/v2/core/images"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/internal/kubetest"
	"ceval.dev/ceval/internal/regtest"
	"ceval.dev/ceval/task"
)

// A task with sandbox.packages on the real test cluster: ceval images push --kubernetes
// builds its Debian package image (ceval.local/packages:HASH, from the image cache when the
// inputs are unchanged), pushes it where kubernetes.registry maps it, and the run's Pod names
// it by that digest: the kubelet pulls exactly that digest from the TLS+htpasswd registry
// (the node had nothing under the prefix before), and the agent uses the package (python3,
// which the default image lacks) to succeed. Red if a package image is not mapped (the Pod
// would name ceval.local/packages:HASH, which no node has) or not pinned (a tag reaching the
// node). The package image itself cannot be one of the test's own (the task names it by its
// inputs): no other cluster test may import a package image into the node under Never, or the
// kubelet's credential re-verification refuses it after this test pulled it with the Secret.
func TestKubePackageImagePushedThenPulledByDigestRunsThePackage(t *testing.T) {
	c, ns, cfg, prefix := kubeRegistrySetup(t)
	cl, ctx := ctrtest.Connect(t)
	marker := path.Base(prefix)
	// An init image of the test's own (see kubePushImagesOfTheirOwn: the kubelet's credential
	// re-verification must not reach other tests' Pods).
	if _, err := images.BuildInit(ctx, cl, images.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	initName := images.InitRepo + ":t-" + marker
	regtest.DeriveImage(t, ctx, cl, images.InitName(), initName, marker)
	if err := appendFile(cfg, "  init_image: "+initName+"\n"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tk := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(tk, []byte("task_id: kube-packages\ninitial_prompt: p\n"+
		"agent: {type: command, command: [python3, -c, 'import sys; open(\"out.txt\", \"w\").write(\"py%d.%d \" % sys.version_info[:2] + str(6*7))']}\n"+
		"sandbox: {packages: [python3], limits: {timeout: 120s}}\n"+
		"success_criteria: [{type: file_matches_regex, path: out.txt, pattern: '^py3\\.[0-9]+ 42$'}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := task.Load(tk)
	if err != nil {
		t.Fatal(err)
	}
	pkgImage := loaded.Sandbox.Image
	if !strings.HasPrefix(pkgImage, images.LocalPrefix+"packages:") {
		t.Fatalf("the task's image is %s, want a package image", pkgImage)
	}
	if n := nodeImagesUnder(t, prefix); len(n) != 0 {
		t.Fatalf("the node has %v before the push", n)
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
	byDigest := map[string]string{}
	for _, m := range pushedLine.FindAllStringSubmatch(r.stdout, -1) {
		if !strings.HasPrefix(m[2], prefix+"/") {
			t.Errorf("%s pushed to %s, not under kubernetes.registry %s", m[1], m[2], prefix)
		}
		byDigest[m[1]] = m[3]
	}
	initPinned, pkgPinned := byDigest[initName], byDigest[pkgImage]
	if len(byDigest) != 2 || initPinned == "" || pkgPinned == "" {
		t.Fatalf("pushed %v, want the init image %s and the package image %s\n%s", byDigest, initName, pkgImage, r.stdout)
	}
	local, err := images.Lookup(ctx, cl, pkgImage)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(pkgPinned, "@"+local.ManifestDigest.String()) {
		t.Errorf("pushed %s, but the local package image's manifest is %s", pkgPinned, local.ManifestDigest)
	}

	runs := t.TempDir()
	r = ceval(t, "run", "--config", cfg, "--runs-dir", runs, tk)
	if r.code != 0 {
		t.Fatalf("run on the cluster: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	res := readOneResult(t, runs)
	if res.Status != "SUCCESS" || res.Image.Name != pkgPinned || !strings.HasSuffix(pkgPinned, "@"+res.Image.Digest.String()) {
		t.Errorf("result %s image %+v, want SUCCESS on %s", res.Status, res.Image, pkgPinned)
	}
	got := nodeImagesUnder(t, prefix)
	for _, want := range []string{initPinned, pkgPinned} {
		if !slices.Contains(got, want) {
			t.Errorf("the node's images %v: it did not pull %s", got, want)
		}
	}
	evs, err := kubetest.Clientset(t, c).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pulled := false
	var msgs []string
	for _, e := range evs.Items {
		msgs = append(msgs, e.Reason+": "+e.Message)
		if e.Reason == "Pulled" && strings.Contains(e.Message, "Successfully pulled image") && strings.Contains(e.Message, `"`+pkgPinned+`"`) {
			pulled = true
		}
		if strings.Contains(e.Message, images.LocalPrefix) || strings.Contains(e.Message, prefix+"/packages:") {
			t.Errorf("a name other than the digest reached the node: %s: %s", e.Reason, e.Message)
		}
	}
	if !pulled {
		t.Errorf("the kubelet did not pull %s: %v", pkgPinned, msgs)
	}
	if err := kubetest.Leftovers(context.Background(), c, ns); err != nil {
		t.Errorf("left after the run: %v", err)
	}
}
