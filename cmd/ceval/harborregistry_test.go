package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/pkg/namespaces"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

// A Harbor task of our own whose Dockerfile is FROM an image pushed to the test registry is
// imported and audited end to end in an empty containerd namespace with no image step by
// hand: the import names the base as sandbox.image, the audit's runs pull it once, pin its
// digest, and the oracle, the null agent and the cheats (and the tests in the verifier
// container) all run in it.
func TestHarborTaskFromARegistryBaseIsImportedAndAuditedWithNoImageStep(t *testing.T) {
	reg := os.Getenv("CEVAL_TEST_REGISTRY")
	if reg == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and a registry is required: CEVAL_TEST_REGISTRY unset (scripts/registry.sh start DIR)")
		}
		t.Skip("CEVAL_TEST_REGISTRY unset: start one with scripts/registry.sh start DIR and export its env")
	}
	c, ctx := ctrtest.Connect(t)
	hosts := t.TempDir()
	ca, err := os.ReadFile(os.Getenv("CEVAL_TEST_REGISTRY_CA"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(hosts, reg), 0o755)
	os.WriteFile(filepath.Join(hosts, reg, "ca.crt"), ca, 0o644)
	dc := filepath.Join(t.TempDir(), "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte(os.Getenv("CEVAL_TEST_REGISTRY_USER") + ":" + os.Getenv("CEVAL_TEST_REGISTRY_PASSWORD")))
	os.WriteFile(dc, []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg, auth)), 0o600)
	rflags := []string{"--hosts-dir", hosts, "--docker-config", dc}

	// The base: ceval's default image (busybox) with bash (harbor_reward runs test.sh with
	// bash, as Harbor does), pushed from the test namespace.
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	buildDefaultWithBash(t, ctx, c, images.DefaultName)
	base := fmt.Sprintf("%s/ceval-test/harbor-base-%d:v1", reg, os.Getpid())
	if r := ceval(t, append([]string{"images", "push", images.DefaultName, base, "--namespace", ctrtest.Namespace}, rflags...)...); r.code != 0 {
		t.Fatalf("push: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	src := filepath.Join(t.TempDir(), "greet-file")
	for name, body := range map[string]string{
		"task.toml":              "version = \"1.0\"\n\n[metadata]\nauthor_name = \"ceval\"\ndifficulty = \"easy\"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 60.0\n\n[environment]\nmemory_mb = 256\nstorage_mb = 32\n",
		"instruction.md":         "Write the word ready into /app/greeting.txt.\n",
		"environment/Dockerfile": "FROM " + base + "\nWORKDIR /app\n",
		"solution/solve.sh":      "#!/bin/sh\necho ready > /app/greeting.txt\n",
		"tests/test.sh":          "#!/bin/sh\nmkdir -p /logs/verifier\nif [ \"$(cat /app/greeting.txt 2>/dev/null)\" = ready ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
	} {
		p := filepath.Join(src, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o755)
	}
	out := t.TempDir()
	r := ceval(t, "import", "harbor", src, "--out", out)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "became sandbox.image "+base) {
		t.Fatalf("import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	ns := fmt.Sprintf("%s-harbor", ctrtest.Namespace)
	nctx := namespaces.WithNamespace(ctx, ns)
	t.Cleanup(func() {
		cctx := context.WithoutCancel(nctx)
		imgs, _ := c.ImageService().List(cctx)
		for _, img := range imgs {
			ctrtest.RemoveImage(cctx, c, img.Name)
		}
		_ = c.NamespaceService().Delete(cctx, ns)
	})
	runs := t.TempDir()
	r = ceval(t, append([]string{"audit", filepath.Join(out, "greet-file", "task.yaml"), "--namespace", ns, "--runs-dir", runs, "--only", "stub-tests"}, rflags...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "greet-file  ok") {
		t.Fatalf("audit: exit %d, want 0 (ok)\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("audit:\n%s", r.stdout)
	recs, err := c.ImageService().List(nctx)
	if err != nil {
		t.Fatal(err)
	}
	var pinned bool
	for _, rec := range recs {
		pinned = pinned || strings.HasPrefix(rec.Name, strings.TrimSuffix(base, ":v1")+"@sha256:")
	}
	if !pinned {
		t.Fatalf("no pinned digest record of %s in namespace %s: %v", base, ns, recs)
	}
}
