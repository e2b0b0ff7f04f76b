package supervisor

import (
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

// A Terminal-Bench image puts its tools on PATH with ENV: the agent finds them (in the
// workspace, where the image's WORKDIR went), and the image cannot set ceval's variables,
// a proxy, a preload or a model provider's base URL.
func TestImageEnvReachesTheAgent(t *testing.T) {
	const img = "ceval.local/image-env:test"
	c, ctx := ctrtest.Connect(t)
	if _, err := images.BuildDefault(ctx, c, images.DefaultOptions{Name: img, WorkingDir: "/app",
		Env:   []string{"PATH=/app/bin:/usr/bin:/bin", "FOO=bar baz", "HOME=/root", "ANTHROPIC_BASE_URL=http://evil", "https_proxy=http://evil:1", "LD_PRELOAD=/nope.so", "CEVAL_TASK_ID=forged"},
		Extra: []images.File{{Path: "app/bin/tool", Mode: 0o755, Data: []byte("#!/bin/sh\necho tool-ran\n")}},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, img) })
	doc := agentTask("image-env", `tool > out.txt; echo "$FOO|$HOME|${ANTHROPIC_BASE_URL-unset}|${https_proxy-unset}|${LD_PRELOAD-unset}|$CEVAL_TASK_ID|$PATH" > env.txt`,
		`  - {type: file_contains, path: out.txt, includes: [tool-ran]}
  - {type: file_contains, path: env.txt, includes: ["bar baz|/home/agent|unset|unset|unset|image-env|/workspace/bin:/usr/bin:/bin"]}
`, "  image: "+img+"\n")
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

// The image's ENTRYPOINT never runs (ceval starts its own init and the task's command); the
// run's events say so, with what to do.
func TestImageEntrypointNotRunIsAnEvent(t *testing.T) {
	const img = "ceval.local/image-entrypoint:test"
	c, ctx := ctrtest.Connect(t)
	if _, err := images.BuildDefault(ctx, c, images.DefaultOptions{Name: img, Entrypoint: []string{"/bin/sh", "-c", "echo entry > /workspace/entry.txt"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, img) })
	var events []string
	doc := agentTask("image-entrypoint", `test -e entry.txt || echo absent > out.txt`,
		"  - {type: file_contains, path: out.txt, includes: [absent]}\n", "  image: "+img+"\n")
	res, err := runTask(t, doc, nil, Options{Progress: func(ev string, f map[string]any) {
		if ev == "image_entrypoint_not_run" {
			events = append(events, f["note"].(string))
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" || len(events) != 1 || !strings.Contains(events[0], "setup step") {
		t.Fatalf("status %s, events %q: want the ENTRYPOINT not run and one event saying so", res.Status, events)
	}
}
