package supervisor

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
)

// A Terminal-Bench style image: its data is COPYed into its WORKDIR (/app), with a link to
// a host secret's path and a FIFO planted beside it.
func buildWorkdirImage(t *testing.T, name string, extra ...images.File) {
	t.Helper()
	c, ctx := ctrtest.Connect(t)
	files := append([]images.File{
		{Path: "app/data.txt", Mode: 0o644, Data: []byte("image data 7f3a\n")},
		{Path: "app/sub/nested.txt", Mode: 0o600, Data: []byte("nested\n")},
		{Path: "app/override.txt", Mode: 0o644, Data: []byte("from the image\n")},
		{Path: "app/shadow", Link: "/etc/shadow"},
		{Path: "app/pipe", Mode: 0o644, FIFO: true},
	}, extra...)
	if _, err := images.BuildDefault(ctx, c, images.DefaultOptions{Name: name, WorkingDir: "/app", Extra: files}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, name) })
}

const workdirScript = `cat data.txt > out.txt; cat sub/nested.txt > nested-out.txt; cat override.txt > override-out.txt
[ -L shadow ] && readlink shadow > link.txt; [ -e pipe ] || echo none > pipe.txt; ls -n data.txt > owner.txt`

func TestImageWorkdirFilesAreInTheWorkspace(t *testing.T) {
	const img = "ceval.local/workdir-data:test"
	buildWorkdirImage(t, img)
	criteria := `  - {type: file_contains, path: out.txt, includes: ["image data 7f3a"]}
  - {type: file_contains, path: nested-out.txt, includes: ["nested"]}
  - {type: file_contains, path: override-out.txt, includes: ["from the template"]}
  - {type: file_contains, path: link.txt, includes: ["/etc/shadow"]}
  - {type: file_contains, path: pipe.txt, includes: ["none"]}
  - {type: file_contains, path: owner.txt, includes: [" 2000 "]}
`
	files := map[string]string{"tpl/override.txt": "from the template\n"}
	doc := agentTask("imgwd", workdirScript, criteria, "  image: "+img+"\n  workspace: {template_dir: tpl}\n")
	var events []string
	res, err := runTask(t, doc, files, Options{Progress: func(ev string, f map[string]any) {
		if ev == "image_workdir" {
			b, _ := json.Marshal(f)
			events = append(events, string(b))
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" {
		for _, c := range res.Criteria {
			t.Logf("%s: %s %s", c.Type, c.Status, c.Details)
		}
		t.Fatalf("status %s, want SUCCESS (the image's /app content in the workspace)", res.Status)
	}
	// The link was copied as a link: the host's /etc/shadow was never read into the workspace.
	ws := filepath.Join(res.Dir, record.WorkspaceDir)
	if b, err := os.ReadFile(filepath.Join(ws, "shadow")); err == nil {
		t.Errorf("the snapshot holds shadow as a file (%d bytes): the image's link was followed", len(b))
	}
	if shadow, err := os.ReadFile("/etc/shadow"); err == nil && len(shadow) > 0 {
		filepath.Walk(ws, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				if b, _ := os.ReadFile(p); len(b) > 0 && bytes.Contains(b, shadow[:min(len(shadow), 32)]) {
					t.Errorf("%s holds the host's /etc/shadow", p)
				}
			}
			return nil
		})
	}
	if len(events) != 1 || !strings.Contains(events[0], `"dir":"/app"`) || !strings.Contains(events[0], "pipe (FIFO)") {
		t.Errorf("image_workdir events = %v, want one naming /app and the skipped FIFO", events)
	}
}

func TestImageWorkdirIgnoreLeavesTheWorkspaceEmpty(t *testing.T) {
	const img = "ceval.local/workdir-ignore:test"
	buildWorkdirImage(t, img)
	doc := agentTask("imgwdignore", "cat data.txt > out.txt", "  - {type: file_contains, path: out.txt, includes: [\"image data 7f3a\"]}\n",
		"  image: "+img+"\n  image_workdir: ignore\n")
	res, err := runTask(t, doc, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "FAILURE" {
		t.Fatalf("status %s, want FAILURE (image_workdir: ignore starts from an empty workspace)", res.Status)
	}
}

// An image whose working directory does not fit the workspace is the task author's error:
// the run's preparation fails naming the image and the cap, and no agent runs on a part.
func TestImageWorkdirOverTheCapIsAnError(t *testing.T) {
	const img = "ceval.local/workdir-big:test"
	buildWorkdirImage(t, img, images.File{Path: "app/big.bin", Mode: 0o644, Data: bytes.Repeat([]byte{'x'}, 2<<20)})
	doc := agentTask("imgwdbig", "touch ran", "  - {type: file_exists, path: ran}\n", "  image: "+img+"\n")
	doc = strings.Replace(doc, "disk_mb: 64", "disk_mb: 1", 1)
	res, err := runTask(t, doc, nil, Options{})
	if err == nil {
		t.Fatalf("a 2 MiB working directory in a 1 MiB workspace ran: %+v", res)
	}
	for _, want := range []string{img, "/app", "disk_mb 1", "image_workdir: ignore"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if res == nil || res.Status != "ERROR" {
		t.Errorf("result %+v, want ERROR", res)
	}
}
