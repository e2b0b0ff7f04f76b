package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/launcher"
)

// closedStateContainerd starts a throwaway containerd whose state directory is 0700, as
// Debian's system service keeps /run/containerd, and stops it by its PID at the end. It
// returns the socket and the state directory. Without root or containerd it skips (fails
// under CI=true).
func closedStateContainerd(t *testing.T) (sock, state string) {
	t.Helper()
	bin, err := exec.LookPath("containerd")
	if os.Geteuid() != 0 || err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: this test starts its own containerd and needs root and the containerd binary (euid %d, %v)", os.Geteuid(), err)
		}
		t.Skip("needs root and the containerd binary")
	}
	dir, err := os.MkdirTemp("", "ceval-closed-state-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o711)
	state, sock = filepath.Join(dir, "state"), filepath.Join(dir, "c.sock")
	if err := os.Mkdir(state, 0o700); err != nil { // containerd keeps an existing directory's mode
		t.Fatal(err)
	}
	cfg := "version = 2\nroot = \"" + dir + "/root\"\nstate = \"" + state + "\"\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n" +
		"[grpc]\n  address = \"" + sock + "\"\n[ttrpc]\n  address = \"" + sock + ".ttrpc\"\n"
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	d := exec.Command(bin, "-c", filepath.Join(dir, "config.toml"))
	d.Stdout, d.Stderr = logf, logf
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = d.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = d.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = d.Process.Kill()
			<-done
		}
		logf.Close()
		for _, cg := range append([]string{"/sys/fs/cgroup/" + ctrtest.Namespace}, globOrNil("/sys/fs/cgroup/*/"+ctrtest.Namespace)...) {
			_ = os.Remove(cg) // the empty directories runc leaves
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("throwaway containerd's directory: %v", err)
		}
	})
	// A bound, not a wait: a loaded host starts a daemon slowly (15 s was within its reach).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		c, _, err := launcher.Connect(context.Background(), sock, ctrtest.Namespace)
		if err == nil {
			c.Close()
			return sock, state
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "containerd.log"))
			t.Fatalf("throwaway containerd did not come up: %v\n%s", err, log)
		}
	}
}

func globOrNil(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	return m
}

// TestEveryEntryPointRefusesAContainerdWhoseStateDirRunsCannotTraverse: against a daemon
// with a 0700 state directory, each command that starts containers exits 3 with one line
// naming the fix, and nothing was created: no run directory, no namespace (so no container,
// snapshot, lease or image) in the daemon. The same daemon with the directory opened to
// others runs a sandbox, so the refusal is the state path's.
func TestEveryEntryPointRefusesAContainerdWhoseStateDirRunsCannotTraverse(t *testing.T) {
	sock, state := closedStateContainerd(t)
	verified, ws := containerTask(t, "42")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"run", []string{"run", "../../examples/hello/task.yaml"}},
		{"an experiment", []string{"run", "../../examples/experiment.yaml"}},
		{"audit", []string{"audit", "../../examples/hello/task.yaml"}},
		{"selftest", []string{"selftest", "--only", "canary-ceval-binary"}},
		{"sandbox exec", []string{"sandbox", "exec", "--", "true"}},
		{"grade with a container tier", []string{"grade", verified, "--workspace", ws}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := filepath.Join(t.TempDir(), "runs")
			args := append([]string{"--containerd-address", sock, "--namespace", ctrtest.Namespace}, tc.args...)
			if tc.args[0] != "sandbox" && tc.args[0] != "grade" {
				args = append(args, "--runs-dir", runs)
			}
			r := ceval(t, args...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 3 || len(lines) != 1 || !strings.Contains(lines[0], "chmod o+x "+state) || !strings.Contains(lines[0], "error preparing rootfs") {
				t.Errorf("exit %d, stderr %q; want 3 and one line naming chmod o+x %s", r.code, r.stderr, state)
			}
			if _, err := os.Stat(runs); err == nil {
				t.Errorf("the run directory %s was made", runs)
			}
			if strings.Contains(r.stdout, "NOT_GRADED") {
				t.Errorf("graded instead of refused: %s", r.stdout)
			}
		})
	}
	c, ctx, err := launcher.Connect(context.Background(), sock, ctrtest.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ns, err := c.NamespaceService().List(ctx); err != nil || len(ns) != 0 {
		t.Errorf("namespaces in the daemon after the refusals: %v %v; want none", ns, err)
	}

	os.Chmod(state, 0o711)
	if r := ceval(t, "--containerd-address", sock, "--namespace", ctrtest.Namespace, "sandbox", "exec", "--", "true"); r.code != 0 {
		t.Fatalf("state 0711: exit %d, stderr %q; want the sandbox to run", r.code, r.stderr)
	}
	if err := ctrtest.Leftovers(ctx, c); err != nil {
		t.Errorf("left behind after the sandbox: %v", err)
	}
}
