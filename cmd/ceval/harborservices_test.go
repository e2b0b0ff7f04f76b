package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

// TestImportedHarborTaskWhoseTestsQueryAServiceAuditsOk: a Harbor task (written here) whose
// answer lives in a compose service, which its tests/test.sh queries (as Harbor's tests do from
// main, beside the services): the import names the service on the verifier criterion
// (services: [notes]), so the verifier reaches it and the audit says ok (the oracle stores 42
// and passes, the null agent and the cheats fail). Red without the fix: the verifier could not
// resolve notes, the oracle scored 0 and the audit said broken.
func TestImportedHarborTaskWhoseTestsQueryAServiceAuditsOk(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	out := t.TempDir()
	r := ceval(t, "import", "harbor", "../../importer/testdata/conformance/harbor/tests-query-service", "--out", out)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "tests-query-service/task.yaml: ok") {
		t.Fatalf("import: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	tf := filepath.Join(out, "tests-query-service", "task.yaml")
	if data, _ := os.ReadFile(tf); !regexp.MustCompile(`harbor_reward: true\n\s+services:\n\s+- notes\n`).Match(data) {
		t.Fatalf("the verifier criterion does not name the service its tests reach:\n%s", data)
	}
	// The Dockerfile is a plain FROM debian:bookworm-slim (no registry here): the default
	// image with bash (harbor_reward runs test.sh with bash; busybox's wget) stands in for it.
	const base = "docker.io/library/debian:bookworm-slim"
	buildDefaultWithBash(t, ctx, c, base)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, base) })
	r = ceval(t, "audit", "--namespace", ctrtest.Namespace, "--runs-dir", t.TempDir(), "-j", "2", tf)
	if r.code != 0 || !regexp.MustCompile(`tests-query-service\s+ok\s+SUCCESS 1.00\s+FAILURE 0.00`).MatchString(r.stdout) {
		t.Fatalf("audit: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
