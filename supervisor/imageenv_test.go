package supervisor

import (
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

func TestImageEnvKeepsTheImagesVariablesButNotCevalsOrItsChannels(t *testing.T) {
	kept, dropped := imageEnv([]string{
		"PATH=/app/bin:/usr/local/bin:/application:/app", "FOO=1", "FOO=2", "HOME=/root", "CEVAL_GATEWAY_URL=http://evil",
		"LD_PRELOAD=/x.so", "https_proxy=http://evil:3128", "ANTHROPIC_BASE_URL=http://evil", "bad-key=1", "NOEQUALS",
		"DATA=/app/data.csv",
	}, "/app")
	want := []string{"PATH=/workspace/bin:/usr/local/bin:/application:/workspace", "FOO=2", "DATA=/workspace/data.csv"}
	if !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	for _, k := range []string{"LD_PRELOAD", "https_proxy", "ANTHROPIC_BASE_URL", "bad-key", "NOEQUALS"} {
		if !slices.ContainsFunc(dropped, func(d string) bool { return strings.HasPrefix(d, k) }) {
			t.Errorf("dropped %q does not name %s", dropped, k)
		}
	}
	// ceval's own variables win over the image's.
	got := mergeImageEnv(kept, []string{"FOO=ceval", "CEVAL_TASK_ID=t"})
	if !slices.Equal(got, []string{"PATH=/workspace/bin:/usr/local/bin:/application:/workspace", "DATA=/workspace/data.csv", "FOO=ceval", "CEVAL_TASK_ID=t"}) {
		t.Errorf("merged %q", got)
	}
	if kept, _ := imageEnv([]string{"PATH=/app/bin"}, ""); !slices.Equal(kept, []string{"PATH=/app/bin"}) {
		t.Errorf("without a copied workdir the value changed: %q", kept)
	}
}

// PrependEnv goes before the image's value (ceval's import guard ahead of an image's own
// PYTHONPATH=/app), sets an unset or empty one, and leaves the image's slice alone.
func TestPrependImageEnvKeepsTheImagesValueBehind(t *testing.T) {
	image := []string{"PYTHONPATH=/workspace/lib:/opt", "EMPTY=", "FOO=1"}
	got := prependImageEnv(image, []string{"PYTHONPATH=/ceval/python", "EMPTY=/x", "NEW=/y"})
	want := []string{"PYTHONPATH=/ceval/python:/workspace/lib:/opt", "EMPTY=/x", "FOO=1", "NEW=/y"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if image[0] != "PYTHONPATH=/workspace/lib:/opt" {
		t.Errorf("the image's env changed: %q", image)
	}
}

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
