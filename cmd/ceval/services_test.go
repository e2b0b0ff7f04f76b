package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"ceval.dev/ceval/internal/ctrtest"
)

// kill -9 of ceval while its agent runs beside a service: the service's init, whose
// supervisor FIFO closed, ends the service; gc then removes the service's container, task,
// snapshot, lease, scratch mounts and ID slot with the agent's, and nothing is left.
func TestGCAfterKill9RemovesTheRunsServices(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte("id_range: {start: 3355443200, slots: 4}\n"), 0o644)
	doc := "task_id: svc-killed\ninitial_prompt: p\nagent: {type: command, command: [sleep, \"1000\"]}\n" +
		"services:\n  - {name: api, command: [httpd, -f, -p, \"8080\"], ports: [8080], ready: {tcp: 8080, interval: 50ms}}\n" +
		"success_criteria: [{type: file_exists, path: x}]\n"
	cmd, runs := startSleeperTask(t, ctx, c, doc, "--config", cfg)
	killed := false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
			ceval(t, "gc", "--namespace", ctrtest.Namespace)
		}
	})
	if ctrs, _ := c.Containers(ctx); len(ctrs) != 2 {
		t.Fatalf("%d containers while the agent runs beside its service, want 2", len(ctrs))
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed = true
	if ctrtest.Leftovers(ctx, c) == nil {
		t.Fatal("kill -9 left nothing: the test does not test gc")
	}
	r := ceval(t, "gc", "--namespace", ctrtest.Namespace)
	if r.code != 0 {
		t.Fatalf("gc: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := strings.Count("\n"+r.stdout, "\nremoved container "); n != 2 {
		t.Errorf("gc removed %d containers, want the agent's and the service's:\n%s", n, r.stdout)
	}
	if n := strings.Count("\n"+r.stdout, "\nremoved id-slot "); n != 2 {
		t.Errorf("gc freed %d ID slots, want the agent's and the service's:\n%s", n, r.stdout)
	}
	if err := ctrtest.Leftovers(ctx, c); err != nil {
		t.Errorf("after gc: %v", err)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), runs) {
		t.Errorf("scratch mounts under %s left", runs)
	}
}
