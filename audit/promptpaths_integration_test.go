package audit

import (
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

// In the real sandbox, the cheats write at the paths a prompt names absolutely where the agent
// may write them: below the image's WORKDIR /app (whose tree started the workspace, so
// /app/out.txt is the workspace's out.txt) and below an output (/output/run.log, kept there).
// A task that checks only that both exist is hackable by empty-files. Red without
// prompt_paths' absolute paths: the cheat wrote nothing, FAILURE.
func TestCheatsWriteAtTheImagesWorkdirAndOutputPathsThePromptNames(t *testing.T) {
	const img = "ceval.local/audit-workdir-app:test"
	ctx, ro := runOptions(t)
	if _, err := images.BuildDefault(ctx, ro.Client, images.DefaultOptions{Name: img, WorkingDir: "/app", Extra: []images.File{
		{Path: "app/data.txt", Mode: 0o644, Data: []byte("hello\n")},
	}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, ro.Client, img) })
	doc := "task_id: workdir-and-output\n" +
		"initial_prompt: Write /app/out.txt, the lines of /app/data.txt upper-cased, and log what you did to /output/run.log.\n" +
		"sandbox:\n  image: " + img + "\n  outputs: [/output]\n  limits: {timeout: 1m, memory_mb: 256, pids: 64, disk_mb: 16}\n" +
		"success_criteria:\n  - {type: file_exists, path: out.txt}\n  - {type: file_exists, path: /output/run.log}\n"
	reps, err := Audit(ctx, []Target{{Task: load(t, writeTask(t, doc, map[string]string{}))}}, Options{Run: ro, Jobs: 2, Agents: []string{"empty-files"}})
	if err != nil {
		t.Fatal(err)
	}
	run := runOf(reps[0], "empty-files")
	if !run.Success {
		t.Errorf("empty-files: %s %.2f (%s; %+v), want SUCCESS: it writes /app/out.txt as the workspace's out.txt and /output/run.log", run.Status, run.Score, run.Error, run.Criteria)
	}
	// the unchanged agent hands a starting file (data.txt) over at both paths, and passes too
	if r := runOf(reps[0], NullAgent); r.Success || r.Error != "" {
		t.Errorf("null: %s (%s), want a failure", r.Status, r.Error)
	}
	if r := runOf(reps[0], UnchangedAgent); !r.Success {
		t.Errorf("unchanged: %s (%s; %+v), want SUCCESS: it copies data.txt to both paths the prompt names", r.Status, r.Error, r.Criteria)
	}
}
