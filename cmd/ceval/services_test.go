package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"ceval.dev/ceval/images"
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

// TestImportedHarborComposeTaskRunsEndToEndAndAuditsOk: a Harbor task whose compose file
// has a sidecar with a healthcheck imports ok, and its service serves the agent: an agent
// that asks it passes, one that does nothing fails, and the audit (the oracle solution
// against the null agent and the cheats) says ok.
func TestImportedHarborComposeTaskRunsEndToEndAndAuditsOk(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	out := t.TempDir()
	r := ceval(t, "import", "harbor", "../../importer/testdata/harbor/with-service", "--out", out)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "with-service/task.yaml: ok") {
		t.Fatalf("import: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The sample's Dockerfile is a plain FROM debian:bookworm-slim, which the import makes the
	// task's image (pulled when missing; no registry here): the default image with bash
	// (harbor_reward runs test.sh with bash) stands in for it under that name.
	const base = "docker.io/library/debian:bookworm-slim"
	buildDefaultWithBash(t, ctx, c, base)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, base) })
	tf := filepath.Join(out, "with-service", "task.yaml")
	if data, _ := os.ReadFile(tf); !strings.Contains(string(data), "image: debian:bookworm-slim") {
		t.Fatalf("the import did not make the Dockerfile's base the task's image:\n%s", data)
	}
	exp := filepath.Join(out, "exp.yaml")
	os.WriteFile(exp, []byte("experiment_id: harbor-services\ntasks: [with-service/task.yaml]\nvariants:\n"+
		"  - variant_id: asks\n    agent: {type: command, command: [/bin/sh, -c, \"wget -qO quote.txt http://quotes:5000/quote.txt\"]}\n"+
		"  - variant_id: idle\n    agent: {type: command, command: [/bin/true]}\n"), 0o644)
	runs := t.TempDir()
	r = ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, exp)
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1 (idle fails)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	s := readSummary(t, onlyDir(t, runs))
	if s.Variants[0].VariantID != "asks" || s.Variants[0].Passed != 1 || s.Variants[1].Passed != 0 || s.Variants[1].Runs != 1 {
		t.Fatalf("summary %+v", s.Variants)
	}
	r = ceval(t, "audit", "--namespace", ctrtest.Namespace, "--runs-dir", t.TempDir(), "-j", "2", tf)
	if r.code != 0 || !regexp.MustCompile(`with-service\s+ok\s+SUCCESS 1.00`).MatchString(r.stdout) {
		t.Fatalf("audit: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
