// Package tasktest writes the task files integration tests of several packages (supervisor,
// experiment) run. Test code only.
package tasktest

import (
	"encoding/json"
	"strings"
)

// AgentTask is a task file whose command agent runs script under /bin/sh, with small limits,
// extra YAML (whole lines) before success_criteria and criteria (indented list items) as its
// criteria.
func AgentTask(id, script, criteria string, extra ...string) string {
	q, _ := json.Marshal(script)
	return "task_id: " + id + "\ninitial_prompt: do the task\nagent:\n  type: command\n  command: [/bin/sh, -c, " + string(q) + "]\n" +
		"sandbox:\n  limits: {timeout: 60s, memory_mb: 256, pids: 128, disk_mb: 64}\n" + strings.Join(extra, "") +
		"success_criteria:\n" + criteria
}
