package experiment

import "ceval.dev/ceval/internal/tasktest"

// agentTask is the task file supervisor's tests write too: a command agent running a script.
var agentTask = tasktest.AgentTask
