package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/internal/kubetest"
	"ceval.dev/ceval/record"
)

// On the real test cluster, a task whose image (built as other harnesses build theirs)
// holds its files in WORKDIR /app, sets ENV and fills /data runs as on the local backend:
// the workspace starts from /app's files (a tool in /app/bin found through the image's PATH,
// moved to /workspace/bin), the image's ENV reaches the agent but a proxy variable does not,
// and the outputs /data (starting from the image's files, its link kept a link, capped at
// disk_mb) and /tmp are writable, copied out and graded at their paths.
func TestKubeRunsFromTheImagesFilesEnvAndOutputs(t *testing.T) {
	k := kubeTestOptions(t)
	node, nctx := kubetest.NodeContainerd(t)
	b := make([]byte, 6)
	rand.Read(b)
	marker := hex.EncodeToString(b)
	img := "ceval.test/kube-image-files:" + marker
	if _, err := images.BuildDefault(nctx, node, images.DefaultOptions{Name: img, WorkingDir: "/app",
		Env: []string{"FOO=from-image", "PATH=/app/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HTTPS_PROXY=http://proxy.invalid:3128"},
		Extra: []images.File{
			{Path: "app/data.txt", Mode: 0o644, Data: []byte(marker + "\n")},
			{Path: "app/bin/hello", Mode: 0o755, Data: []byte("#!/bin/sh\necho hi-from-image\n")},
			{Path: "data/expected.txt", Mode: 0o644, Data: []byte("expected 31\n")},
			{Path: "data/passwd", Link: "/etc/passwd"},
		}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(nctx), node, img) })
	tk := kubeTask(t, agentTask("kube-image-files", `cat data.txt > got.txt; echo "$FOO" > foo.txt; hello > hello.txt; echo "${HTTPS_PROXY:-none}" > proxy.txt
cat /data/expected.txt > /data/answer.txt; [ -L /data/passwd ] && echo link > /data/kind.txt; echo tmp-answer > /tmp/t.txt
dd if=/dev/zero of=/data/big bs=1M count=100 2>/dev/null || echo capped > capped.txt; rm -f /data/big`,
		`  - {type: file_contains, path: got.txt, includes: [`+marker+`]}
  - {type: file_contains, path: foo.txt, includes: [from-image]}
  - {type: file_contains, path: hello.txt, includes: [hi-from-image]}
  - {type: file_contains, path: proxy.txt, includes: [none]}
  - {type: file_contains, path: /data/answer.txt, includes: ["expected 31"]}
  - {type: file_contains, path: /data/kind.txt, includes: [link]}
  - {type: file_contains, path: /tmp/t.txt, includes: [tmp-answer]}
  - {type: file_contains, path: /data/passwd, includes: ["root:"]}
  - {type: file_contains, path: capped.txt, includes: [capped]}
`, "  image: "+img+"\n  outputs: [/data, /tmp]\n"), nil)
	res, err := kubeRun(t, k, tk, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PASS", "PASS", "PASS", "PASS", "PASS", "PASS", "PASS", "FAIL", "PASS"} // the link is never followed; 100 MB into the 64 MB /data fails
	if len(res.Criteria) != len(want) {
		t.Fatalf("%s with %d criteria: %s", res.Status, len(res.Criteria), res.Error)
	}
	for i, c := range res.Criteria {
		if string(c.Status) != want[i] {
			t.Errorf("criterion %d (%s): %s (%s), want %s", i, c.Type, c.Status, c.Details, want[i])
		}
	}
	if b, err := os.ReadFile(filepath.Join(res.Dir, record.OutputsDir, "fs", "data", "answer.txt")); err != nil || string(b) != "expected 31\n" {
		t.Errorf("the run directory's copy of /data/answer.txt: %q, %v", b, err)
	}
	ev, _ := os.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
	for _, w := range []string{`"image_workdir"`, `"image_env"`, "HTTPS_PROXY: would route"} {
		if !strings.Contains(string(ev), w) {
			t.Errorf("events.jsonl has no %s", w)
		}
	}
	if err := kubetest.Leftovers(context.Background(), k.Cluster, k.Namespace); err != nil {
		t.Errorf("left after the run: %v", err)
	}
}

// A file of the image's WORKDIR that only root may read cannot be copied by the prep
// container (it copies as the agent's UID): the run is an error of its input naming the file
// and the fix, before the agent starts, never a workspace silently missing that file.
func TestKubeImageFileOnlyRootMayReadIsNamedNotDropped(t *testing.T) {
	k := kubeTestOptions(t)
	node, nctx := kubetest.NodeContainerd(t)
	b := make([]byte, 6)
	rand.Read(b)
	img := "ceval.test/kube-image-secret:" + hex.EncodeToString(b)
	if _, err := images.BuildDefault(nctx, node, images.DefaultOptions{Name: img, WorkingDir: "/app", Extra: []images.File{
		{Path: "app/readable.txt", Mode: 0o644, Data: []byte("ok\n")},
		{Path: "app/secret.txt", Mode: 0o600, Data: []byte("root only\n")},
	}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(nctx), node, img) })
	tk := kubeTask(t, agentTask("kube-image-secret", `touch ran.txt`, "  - {type: file_exists, path: ran.txt}\n", "  image: "+img+"\n"), nil)
	res, err := kubeRun(t, k, tk, Options{})
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if res != nil {
		msg += " " + res.Error
		if res.Status == "SUCCESS" {
			t.Fatalf("the run succeeded with the image's secret.txt left out: %+v", res)
		}
	}
	for _, w := range []string{"secret.txt", "chmod -R a+rX", "image_workdir: ignore"} {
		if !strings.Contains(msg, w) {
			t.Errorf("the error %q does not name %q", msg, w)
		}
	}
	if err := kubetest.Leftovers(context.Background(), k.Cluster, k.Namespace); err != nil {
		t.Errorf("left after the run: %v", err)
	}
}
