package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
)

// An agent that writes its answer to /output/x.txt (outside the workspace, as ~37% of
// Terminal-Bench's tests expect) is graded on it, from the copy in the run directory.
func TestAgentWritingAnOutputIsGradedSuccess(t *testing.T) {
	doc := agentTask("outputs-ok", `mkdir -p /output/sub && echo 'hello output 5e1' > /output/x.txt && echo nested > /output/sub/n.txt && echo tmp-answer > /tmp/y.txt`,
		`  - {type: file_contains, path: /output/x.txt, includes: ["hello output 5e1"]}
  - {type: file_contains, path: /tmp/y.txt, includes: [tmp-answer]}
  - {type: file_exists, path: "/output/**/n.txt"}
`, "  outputs: [/tmp, /output]\n")
	res, err := runTask(t, doc, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" {
		for _, c := range res.Criteria {
			t.Logf("%s: %s %s", c.Type, c.Status, c.Details)
		}
		t.Fatalf("status %s, want SUCCESS", res.Status)
	}
	if b, err := os.ReadFile(filepath.Join(res.Dir, record.OutputsDir, "fs", "output", "x.txt")); err != nil || string(b) != "hello output 5e1\n" {
		t.Errorf("the run directory's copy of /output/x.txt: %q, %v", b, err)
	}
	for _, m := range []string{"0.json", "1.json"} {
		if _, err := os.Stat(filepath.Join(res.Dir, record.OutputsDir, m)); err != nil {
			t.Errorf("manifest %s: %v", m, err)
		}
	}
}

// The agent plants a link to a host file in an output and writes past the output's cap: the
// link is recorded as a link (its target never read), and the capped file is still there for
// file_exists (a cap never hides a file), its content omitted.
func TestOutputSnapshotFollowsNoLinkAndItsCapHidesNoFile(t *testing.T) {
	doc := agentTask("outputs-attack", `ln -s /etc/passwd /output/leak; ln -s / /output/root;
dd if=/dev/zero of=/output/big bs=1M count=100 2>/dev/null || echo capped > /workspace/cap.txt`,
		`  - {type: file_contains, path: /output/leak, includes: ["root:"]}
  - {type: file_contains, path: /output/root/etc/passwd, includes: ["root:"]}
  - {type: file_contains, path: cap.txt, includes: [capped]}
  - {type: file_exists, path: /output/big}
`, "  outputs: [/output]\n")
	res, err := runTask(t, doc, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"FAIL", "FAIL", "PASS", "PASS"}
	for i, c := range res.Criteria {
		if string(c.Status) != want[i] {
			t.Errorf("criterion %d (%s): %s (%s), want %s", i, c.Type, c.Status, c.Details, want[i])
		}
	}
	copyDir := filepath.Join(res.Dir, record.OutputsDir, "fs", "output")
	for _, name := range []string{"leak", "root"} {
		if fi, err := os.Lstat(filepath.Join(copyDir, name)); err == nil {
			t.Errorf("the copy holds %s as a %v: a link was followed or kept on disk", name, fi.Mode().Type())
		}
	}
	hits := strings.Join(res.LimitsHit, "\n")
	if !strings.Contains(hits, "output /output: disk limit reached") || !strings.Contains(hits, "output /output: ") {
		t.Errorf("limits_hit %q: want the full output and its snapshot's file cap named", res.LimitsHit)
	}
}

// An output declared over a directory the image fills keeps the image's files there (no link
// of the image followed), beside what the agent writes.
func TestOutputStartsFromTheImagesFilesAtItsPath(t *testing.T) {
	const img = "ceval.local/output-image-files:test"
	c, ctx := ctrtest.Connect(t)
	if _, err := images.BuildDefault(ctx, c, images.DefaultOptions{Name: img, WorkingDir: "/app", Extra: []images.File{
		{Path: "data/expected.txt", Mode: 0o644, Data: []byte("expected 31\n")},
		{Path: "data/passwd", Link: "/etc/passwd"},
	}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, img) })
	doc := agentTask("output-image", `cat /data/expected.txt > /data/answer.txt; [ -L /data/passwd ] && echo link > /data/kind.txt`,
		`  - {type: file_contains, path: /data/answer.txt, includes: ["expected 31"]}
  - {type: file_contains, path: /data/kind.txt, includes: [link]}
`, "  image: "+img+"\n  outputs: [/data]\n")
	res, err := runTask(t, doc, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" {
		for _, c := range res.Criteria {
			t.Logf("%s: %s %s", c.Type, c.Status, c.Details)
		}
		t.Fatalf("status %s, want SUCCESS", res.Status)
	}
}
