package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/client"
	ctrimages "github.com/containerd/containerd/v2/core/images"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/internal/kubetest"
	"ceval.dev/ceval/internal/regtest"
	"ceval.dev/ceval/kube"
	"ceval.dev/ceval/record"
)

// kubeRegistrySetup readies the test cluster to pull from the test registry: a namespace of
// the test's own with a dockerconfigjson Secret for the registry, a fresh repository prefix,
// and a ceval config naming them (kubernetes.registry, no image_pull_policy: IfNotPresent is
// the default with a registry). It fails unless the node trusts the registry.
func kubeRegistrySetup(t *testing.T) (c *kube.Cluster, ns, cfg, prefix string) {
	t.Helper()
	ro, reg := regtest.Registry(t)
	c = kubetest.Connect(t)
	ns = kubetest.Namespace(t, c)
	nodeDir := filepath.Dir(os.Getenv(kubetest.NodeContainerdEnv))
	if _, err := os.Stat(filepath.Join(nodeDir, "certs.d", reg, "hosts.toml")); err != nil {
		msg := fmt.Sprintf("the node does not trust the test registry %s: scripts/k8s.sh registry %s %s $CEVAL_TEST_REGISTRY_CA (%v)", reg, nodeDir, reg, err)
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip(msg)
	}
	auth := base64.StdEncoding.EncodeToString([]byte(os.Getenv("CEVAL_TEST_REGISTRY_USER") + ":" + os.Getenv("CEVAL_TEST_REGISTRY_PASSWORD")))
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "test-registry"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, reg, auth)},
	}
	if _, err := kubetest.Clientset(t, c).CoreV1().Secrets(ns).Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	prefix = reg + "/ceval-test/push-" + hex.EncodeToString(b)
	cfg = filepath.Join(t.TempDir(), "config.yaml")
	doc := fmt.Sprintf("hosts_dir: %s\ndocker_config: %s\nbackend: kubernetes\nkubernetes:\n  kubeconfig: %s\n  namespace: %s\n  registry: %s\n  image_pull_secrets: [%s]\n",
		ro.HostsDir, ro.DockerConfig, os.Getenv(kubetest.KubeconfigEnv), ns, prefix, secret.Name)
	if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return c, ns, cfg, prefix
}

// nodeImagesUnder lists the node's images whose name starts with prefix.
func nodeImagesUnder(t *testing.T, prefix string) []string {
	t.Helper()
	node, nctx := kubetest.NodeContainerd(t)
	list, err := node.ImageService().List(nctx, "name~="+regexp.QuoteMeta(prefix))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range list {
		names = append(names, i.Name)
	}
	return names
}

var pushedLine = regexp.MustCompile(`(?m)^pushed (\S+) -> (\S+) \((\S+@sha256:[0-9a-f]{64})\)$`)

// kubePushImagesOfTheirOwn makes an init image and an agent image whose IDs no other test
// uses (each the usual one plus a layer holding marker), so that the node pulling them with
// the test's credentials changes nothing for other tests: the kubelet (1.35+, its default
// imagePullCredentialsVerificationPolicy) records an image ID pulled with a Secret and from
// then on re-pulls it for a Pod without that Secret (which fails for the node's imported
// init image under Never). It returns the init image's and the agent image's names.
func kubePushImagesOfTheirOwn(t *testing.T, ctx context.Context, cl *client.Client, marker string) (string, string) {
	t.Helper()
	if _, err := images.BuildInit(ctx, cl, images.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := images.EnsureDefault(ctx, cl, images.DefaultOptions{}); err != nil {
		t.Fatal(err)
	}
	initName := images.InitRepo + ":t-" + marker
	regtest.DeriveImage(t, ctx, cl, images.InitName(), initName, marker)
	agent := "ceval.local/kube-push-test:" + marker
	regtest.DeriveImage(t, ctx, cl, images.DefaultName, agent, marker)
	if _, err := images.Label(ctx, cl, agent); err != nil { // a registry-like image gets the label as a user would
		t.Fatal(err)
	}
	return initName, agent
}

// ceval images push --kubernetes TASK then ceval run --backend kubernetes TASK on the real
// test cluster: the init image and the task's ceval.local image go to the registry the
// config maps them to, the Pod names both by digest under IfNotPresent, the kubelet pulls
// both digests from the test registry (events and the node's images say so; the node had
// neither), the run succeeds on the pushed content and records the pinned reference and
// digest.
func TestKubeImagesPushThenRunPullsEveryImageByDigest(t *testing.T) {
	c, ns, cfg, prefix := kubeRegistrySetup(t)
	cl, ctx := ctrtest.Connect(t)
	marker := path.Base(prefix)
	initName, agent := kubePushImagesOfTheirOwn(t, ctx, cl, marker)
	if err := appendFile(cfg, "  init_image: "+initName+"\n"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tk := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(tk, []byte("task_id: kube-push\ninitial_prompt: p\nagent: {type: command, command: [sh, -c, 'cat /marker > out.txt']}\n"+
		"sandbox: {image: "+agent+", limits: {timeout: 60s}}\nsuccess_criteria: [{type: file_contains, path: out.txt, includes: ["+marker+"]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := nodeImagesUnder(t, prefix); len(n) != 0 {
		t.Fatalf("the node has %v before the push", n)
	}

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
	initPinned, agentPinned := byDigest[initName], byDigest[agent]
	if len(byDigest) != 2 || initPinned == "" || agentPinned == "" {
		t.Fatalf("pushed %v, want the init image %s and %s\n%s", byDigest, initName, agent, r.stdout)
	}
	local, err := images.Lookup(ctx, cl, agent)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(agentPinned, "@"+local.ManifestDigest.String()) {
		t.Errorf("pushed %s, but the local image's manifest is %s", agentPinned, local.ManifestDigest)
	}

	runs := t.TempDir()
	r = ceval(t, "run", "--config", cfg, "--runs-dir", runs, tk)
	if r.code != 0 {
		t.Fatalf("run on the cluster: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	res := readOneResult(t, runs)
	wantRef := prefix + "/kube-push-test:" + marker
	if res.Status != "SUCCESS" || res.Image.Name != agentPinned || res.Image.Reference != wantRef || !strings.HasSuffix(agentPinned, "@"+res.Image.Digest.String()) {
		t.Errorf("result %s image %+v, want SUCCESS on %s pinned from %s", res.Status, res.Image, agentPinned, wantRef)
	}
	got := nodeImagesUnder(t, prefix)
	for _, want := range []string{initPinned, agentPinned} {
		if !slices.Contains(got, want) {
			t.Errorf("the node's images %v: it did not pull %s", got, want)
		}
	}
	t.Cleanup(func() {
		node, nctx := kubetest.NodeContainerd(t)
		for _, n := range nodeImagesUnder(t, prefix) {
			_ = node.ImageService().Delete(nctx, n, ctrimages.SynchronousDelete())
		}
	})
	evs, err := kubetest.Clientset(t, c).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pulled := map[string]bool{}
	for _, e := range evs.Items {
		if e.Reason == "Pulled" && strings.Contains(e.Message, "Successfully pulled image") {
			for _, want := range []string{initPinned, agentPinned} {
				if strings.Contains(e.Message, `"`+want+`"`) {
					pulled[want] = true
				}
			}
		}
		if strings.Contains(e.Message, wantRef) || strings.Contains(e.Message, prefix+"/ceval-init:") || strings.Contains(e.Message, images.LocalPrefix) {
			t.Errorf("a name other than the digest reached the node: %s: %s", e.Reason, e.Message)
		}
	}
	if !pulled[initPinned] || !pulled[agentPinned] {
		var msgs []string
		for _, e := range evs.Items {
			msgs = append(msgs, e.Reason+": "+e.Message)
		}
		t.Errorf("the kubelet's pulls %v, want both %s and %s: %v", pulled, initPinned, agentPinned, msgs)
	}
	if err := kubetest.Leftovers(context.Background(), c, ns); err != nil {
		t.Errorf("left after the run: %v", err)
	}

	// An experiment pins both mapped images into plan.json before its first run, and every
	// run names them by those digests.
	exp := filepath.Join(dir, "experiment.yaml")
	if err := os.WriteFile(exp, []byte("experiment_id: kube-push\ntasks: [task.yaml]\nrepeats: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	expRuns := t.TempDir()
	r = ceval(t, "run", "--config", cfg, "--runs-dir", expRuns, "-j", "2", exp)
	if r.code != 0 {
		t.Fatalf("experiment on the cluster: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	plans, _ := filepath.Glob(filepath.Join(expRuns, "*", record.PlanFile))
	if len(plans) != 1 {
		t.Fatalf("plan files %v", plans)
	}
	var plan record.Plan
	data, _ := os.ReadFile(plans[0])
	if err := json.Unmarshal(data, &plan); err != nil {
		t.Fatal(err)
	}
	pinned := map[string]string{}
	for _, p := range plan.Images {
		pinned[p.Name] = p.Digest.String()
	}
	for ref, byDigest := range map[string]string{wantRef: agentPinned, prefix + "/ceval-init:t-" + marker: initPinned} {
		if d := pinned[ref]; d == "" || !strings.HasSuffix(byDigest, "@"+d) {
			t.Errorf("plan.json pins %v: want %s pinned as %s", pinned, ref, byDigest)
		}
	}
	results, _ := filepath.Glob(filepath.Join(expRuns, "*", "default", "kube-push", "*", record.ResultFile))
	if len(results) != 2 {
		t.Fatalf("results %v", results)
	}
	for _, p := range results {
		var res record.Result
		data, _ := os.ReadFile(p)
		if err := json.Unmarshal(data, &res); err != nil {
			t.Fatal(err)
		}
		if res.Status != "SUCCESS" || res.Image.Name != agentPinned {
			t.Errorf("%s: %s on %s, want SUCCESS on %s", p, res.Status, res.Image.Name, agentPinned)
		}
	}
}

// appendFile appends s to the file at p.
func appendFile(p, s string) error {
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	return errors.Join(err, f.Close())
}

// readOneResult reads the one result.json under runs.
func readOneResult(t *testing.T, runs string) record.Result {
	t.Helper()
	var found []string
	filepath.WalkDir(runs, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == record.ResultFile {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("result files %v, want one", found)
	}
	data, err := os.ReadFile(found[0])
	if err != nil {
		t.Fatal(err)
	}
	var r record.Result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}
