package verifier

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/supervisor"
	"ceval.dev/ceval/task"
)

// kvTask is a task whose service keeps what the agent stores over HTTP (busybox httpd's
// CGI: /cgi-bin/set?V stores V, /cgi-bin/get answers it), graded by a verifier criterion
// that asks the service.
func kvTask(agent string) string {
	return `task_id: svc-verifier
initial_prompt: store answer-42 in the kv service
agent: {type: command, command: [/bin/sh, -c, "` + agent + `"]}
sandbox:
  limits: {timeout: 60s, memory_mb: 256, pids: 128, disk_mb: 64}
services:
  - name: kv
    command: [sh, -c, "mkdir -p /workspace/www/cgi-bin && cd /workspace/www/cgi-bin && printf '#!/bin/sh\\necho \"$QUERY_STRING\" >/workspace/state\\nprintf \"Content-Type: text/plain\\\\r\\\\n\\\\r\\\\nstored\\\\n\"\\n' >set && printf '#!/bin/sh\\nprintf \"Content-Type: text/plain\\\\r\\\\n\\\\r\\\\n\"\\ncat /workspace/state\\n' >get && chmod 755 set get && exec httpd -f -p 8080 -h /workspace/www"]
    ports: [8080]
    ready: {tcp: 8080, interval: 50ms, retries: 200}
success_criteria:
  - {type: run_command, sandbox: container, services: [kv], command: "wget -qO- http://kv:8080/cgi-bin/get", expected_stdout: answer-42, stdout_match: contains}
`
}

// TestVerifierCriterionQueriesARunningService: a verifier criterion that names the service
// runs while it still runs and reaches it by name as the agent did; the state the agent
// left in the service is what it grades (an idle agent fails), and the service stops only
// after the grade.
func TestVerifierCriterionQueriesARunningService(t *testing.T) {
	for _, tc := range []struct{ name, agent, want string }{
		{"stores the value", "wget -qO- http://kv:8080/cgi-bin/set?answer-42", "SUCCESS"},
		{"idle", "true", "FAILURE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex, c, ctx := newExecutor(t)
			p := filepath.Join(t.TempDir(), "task.yaml")
			if err := os.WriteFile(p, []byte(kvTask(tc.agent)), 0o644); err != nil {
				t.Fatal(err)
			}
			tk, err := task.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			defer tk.Close()
			res, err := supervisor.Run(ctx, tk, supervisor.Options{Client: c, RunsDir: t.TempDir(), Executor: ex, Grace: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.want {
				log, _ := os.ReadFile(filepath.Join(res.Dir, record.ServicesDir, "kv.log"))
				t.Fatalf("status %s, want %s: %+v\nkv.log: %s", res.Status, tc.want, res.Criteria, log)
			}
			events, _ := os.ReadFile(filepath.Join(res.Dir, record.EventsFile))
			ev := string(events)
			if snap, stop := strings.Index(ev, `"snapshot_taken"`), strings.Index(ev, `"service_stopped"`); snap < 0 || stop < snap {
				t.Errorf("the service stopped before the grade:\n%s", ev)
			}
			if err := ctrtest.Leftovers(ctx, c); err != nil {
				t.Errorf("left behind: %v", err)
			}
		})
	}
}

// Without a run, nothing of the task's services runs: a criterion that needs them is not
// graded (never a FAILURE the agent did not earn).
func TestVerifierCriterionWithServicesOutsideARunIsNotGraded(t *testing.T) {
	ex, _, ctx := newExecutor(t)
	c := container("wget -qO- http://kv:8080/")
	c.GraderTier().Services = []string{"kv"}
	_, err := ex.Execute(ctx, c, snap(t, nil), nil)
	if err == nil || !strings.Contains(err.Error(), "run only within ceval run") {
		t.Fatalf("err %v", err)
	}
}
