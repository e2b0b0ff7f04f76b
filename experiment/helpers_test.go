package experiment

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

// agentTask is a task whose command agent runs script under /bin/sh (as supervisor's tests
// write them).
func agentTask(id, script, criteria string, extra ...string) string {
	q, _ := json.Marshal(script)
	return "task_id: " + id + "\ninitial_prompt: do the task\nagent:\n  type: command\n  command: [/bin/sh, -c, " + string(q) + "]\n" +
		"sandbox:\n  limits: {timeout: 60s, memory_mb: 256, pids: 128, disk_mb: 64}\n" + strings.Join(extra, "") +
		"success_criteria:\n" + criteria
}

// removeTestImage deletes the default image from the test namespace, so ctrtest can remove
// the namespace.
func removeTestImage(t *testing.T, ctx context.Context, c *client.Client) {
	ctrtest.RemoveImage(ctx, c, images.DefaultName)
}
