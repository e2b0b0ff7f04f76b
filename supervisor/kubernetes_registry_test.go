package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/images"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cevalimages "ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/internal/kubetest"
	"ceval.dev/ceval/internal/regtest"
	"ceval.dev/ceval/kube"
	"ceval.dev/ceval/registry"
)

// The test cluster's node pulls an image pushed to the private test registry (TLS with its own
// CA, htpasswd) by the digest its tag resolved to: the Pod names REPO@DIGEST under
// IfNotPresent, the kubelet pulls it with the credentials of the dockerconfigjson Secret
// kubernetes.image_pull_secrets names (none in the task), the run succeeds on the pushed
// image's content and records the pin. Without the Secret the registry refuses the node and
// the run fails on the image, not later.
func TestKubePullsAPushedImageByDigestWithThePullSecret(t *testing.T) {
	ro, reg := regtest.Registry(t)
	k := kubeTestOptions(t)
	nodeDir := filepath.Dir(os.Getenv(kubetest.NodeContainerdEnv))
	if _, err := os.Stat(filepath.Join(nodeDir, "certs.d", reg, "hosts.toml")); err != nil {
		msg := fmt.Sprintf("the node does not trust the test registry %s: scripts/k8s.sh registry %s %s $CEVAL_TEST_REGISTRY_CA (%v)", reg, nodeDir, reg, err)
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip(msg)
	}

	// The image: the default image plus a layer no node has (a random marker), pushed from
	// this machine's containerd to a repository of the test's own.
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { removeTestImage(t, context.WithoutCancel(ctx), c) })
	def, err := cevalimages.BuildDefault(ctx, c, cevalimages.DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	marker := hex.EncodeToString(b)
	pushed := regtest.DeriveImage(t, ctx, c, def.Name, "ceval.test/pin:kube-"+marker, marker)
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(ctx), c, pushed.Name) })
	repo := reg + "/ceval-test/kube-" + marker
	qctx := registry.Quiet(ctx)
	res, err := ro.Resolver(qctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cevalimages.Push(qctx, c, pushed.Name, repo+":v1", res, nil); err != nil {
		t.Fatal(ro.Explain(repo, err))
	}
	byDigest := repo + "@" + pushed.ManifestDigest.String()

	node, nctx := kubetest.NodeContainerd(t)
	nodeImages := func() []string {
		list, err := node.ImageService().List(nctx, "name~="+strings.ReplaceAll(repo, ".", `\.`))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, i := range list {
			names = append(names, i.Name)
		}
		return names
	}
	if n := nodeImages(); len(n) != 0 {
		t.Fatalf("the node has %v before the run", n)
	}
	t.Cleanup(func() {
		for _, n := range nodeImages() {
			_ = node.ImageService().Delete(nctx, n, images.SynchronousDelete())
		}
	})

	// The credentials are the cluster operator's Secret in the runs' namespace.
	auth := base64.StdEncoding.EncodeToString([]byte(os.Getenv("CEVAL_TEST_REGISTRY_USER") + ":" + os.Getenv("CEVAL_TEST_REGISTRY_PASSWORD")))
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "test-registry"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, reg, auth)},
	}
	if _, err := kubetest.Clientset(t, k.Cluster).CoreV1().Secrets(k.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k.PullPolicy = kube.PullIfNotPresent
	pins := cevalimages.NewPinner(cevalimages.PullMissing, ro)

	tk := kubeTask(t, agentTask("kube-registry", "cat /marker > which.txt",
		"  - {type: file_contains, path: which.txt, includes: ["+marker+"]}\n", "  image: "+repo+":v1\n"), nil)

	t.Run("without the pull secret the node is refused", func(t *testing.T) {
		start := time.Now()
		kres, err := kubeRun(t, k, tk, Options{Pins: pins})
		if err == nil && kres.Status == "SUCCESS" {
			t.Fatalf("a run without the registry's credentials succeeded: %+v", kres)
		}
		msg := fmt.Sprint(err)
		if kres != nil {
			msg += " " + kres.Status + " " + kres.Error
		}
		if !strings.Contains(msg, "agent image "+repo+"@sha256:") || !strings.Contains(msg, "kubernetes.image_pull_secrets") {
			t.Errorf("the failure does not name the image by digest and kubernetes.image_pull_secrets: %s", msg)
		}
		t.Logf("refused in %v: %s", time.Since(start).Round(time.Millisecond), msg)
		if n := nodeImages(); len(n) != 0 {
			t.Fatalf("the node has %v without the credentials", n)
		}
	})

	k.ImagePullSecrets = []string{secret.Name}
	kres, err := kubeRun(t, k, tk, Options{Pins: pins})
	if err != nil {
		t.Fatal(err)
	}
	if kres.Status != "SUCCESS" || kres.Score != 1 {
		t.Fatalf("run %s score %v: %s %+v", kres.Status, kres.Score, kres.Error, kres.Criteria)
	}
	if kres.Image.Reference != repo+":v1" || kres.Image.Digest != pushed.ManifestDigest {
		t.Errorf("result image %+v, want reference %s:v1 pinned to %s", kres.Image, repo, pushed.ManifestDigest)
	}
	if got := nodeImages(); !slices.Contains(got, byDigest) {
		t.Errorf("the node's images %v: it did not pull %s", got, byDigest)
	}
	evs, err := kubetest.Clientset(t, k.Cluster).CoreV1().Events(k.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The kubelet's events name the agent's image as the Pod does: the digest, pulled (not
	// found present) for the first container that runs it (the prep container, then the
	// agent's finds it present), and never the tag.
	pulled := false
	for _, e := range evs.Items {
		fp := e.InvolvedObject.FieldPath
		if e.Reason == "Pulled" && (fp == "spec.containers{"+kube.ContainerName+"}" || fp == "spec.initContainers{"+kube.PrepContainerName+"}") &&
			strings.Contains(e.Message, "Successfully pulled image \""+byDigest+"\"") {
			pulled = true
		}
		if strings.Contains(e.Message, repo+":") {
			t.Errorf("the tag reached the node: %s: %s", e.Reason, e.Message)
		}
	}
	if !pulled {
		var msgs []string
		for _, e := range evs.Items {
			msgs = append(msgs, e.Reason+": "+e.Message)
		}
		t.Errorf("no event of the kubelet pulling %s: %v", byDigest, msgs)
	}
	if err := kubetest.Leftovers(context.Background(), k.Cluster, k.Namespace); err != nil {
		t.Errorf("left after the run: %v", err)
	}
}
