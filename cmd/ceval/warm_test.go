package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/sandbox/local"
)

// kill -9 of an experiment's ceval while one run's agent runs and two more runs are
// prepared ahead of their turn (warm sandboxes: containers whose init is started and attested,
// waiting for a go-ahead that never comes, their scratch filesystems mounted, ID slots taken):
// ceval gc removes all of it, as it removes a running run's.
func TestGCAfterKill9RemovesTheExperimentsWarmSandboxes(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	const base = 3221225472 + 8*65536 // a range of its own (see TestGCAfterKill9LeavesNothingOfCevals)
	os.WriteFile(cfg, []byte(fmt.Sprintf("id_range: {start: %d, slots: 4}\n", base)), 0o644)
	os.WriteFile(filepath.Join(dir, "task.yaml"), []byte("task_id: sleeper\ninitial_prompt: p\nagent: {type: command, command: [/bin/sh, -c, \"sleep 1000; true\"]}\n"+
		"sandbox: {limits: {timeout: 5m, memory_mb: 64, pids: 32, disk_mb: 8}}\nsuccess_criteria: [{type: file_exists, path: x}]\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "exp.yaml"), []byte("experiment_id: warm\ntasks: [task.yaml]\nrepeats: 4\n"), 0o644)
	runs := t.TempDir()
	cmd := exec.Command(cevalBin, "run", "--namespace", ctrtest.Namespace, "--config", cfg, "--runs-dir", runs, "-j", "1", "--warm", "2", filepath.Join(dir, "exp.yaml"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
			ceval(t, "gc", "--namespace", ctrtest.Namespace)
		}
	})
	// One running, two prepared: three tasks running (two inits waiting), one agent.
	deadline := time.Now().Add(90 * time.Second)
	for {
		tasks, err := c.TaskService().List(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		created, running := 0, 0
		for _, tk := range tasks.Tasks {
			switch tk.Status.String() {
			case "CREATED":
				created++
			case "RUNNING":
				running++
			}
		}
		if created == 0 && running == 3 && agentShells("sleep 1000; true") == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no run running beside two primed ones after 90s: %d created, %d running, %d agents; ceval said:\n%s", created, running, agentShells("sleep 1000; true"), stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var slots []string
	for i := range 4 {
		p := filepath.Join(local.IDLockDir, fmt.Sprintf("%d.lock", base+i*65536))
		if _, err := os.Stat(p); err == nil {
			slots = append(slots, p)
		}
	}
	if len(slots) != 3 {
		t.Errorf("ID slots held by the running and the prepared runs: %v, want 3", slots)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed = true
	r := ceval(t, "gc", "--namespace", ctrtest.Namespace)
	if r.code != 0 {
		t.Fatalf("gc: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	n := 0
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "removed container ") {
			n++
		}
	}
	if n != 3 {
		t.Errorf("gc removed %d containers, want 3:\n%s", n, r.stdout)
	}
	if err := ctrtest.Leftovers(ctx, c); err != nil {
		t.Errorf("after gc: %v", err)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), runs) {
		t.Errorf("scratch mounts under %s left", runs)
	}
	for _, p := range slots {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("ID slot lock %s left (%v)", p, err)
		}
	}
}

// agentShells counts the host's processes that are /bin/sh -c script (an agent's shell; its
// init's arguments name the script too, after others).
func agentShells(script string) int {
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	n := 0
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		if args := strings.Split(string(data), "\x00"); len(args) > 2 && args[0] == "/bin/sh" && args[2] == script {
			n++
		}
	}
	return n
}
