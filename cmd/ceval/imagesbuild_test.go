package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/selftest"
	"ceval.dev/ceval/task"
)

func needMmdebstrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and mmdebstrap is missing: apt-get install mmdebstrap (make setup)")
		}
		t.Skip("mmdebstrap missing: apt-get install mmdebstrap")
	}
}

// TestImagesBuildPackagesGivesAgentPythonNodeGit: what issue 15 asks of a package image,
// through the CLI a user types. The image is built once per machine (the user's image cache
// keeps it across CI runs) and runs exactly as an agent's sandbox: UID 2000, no caps, read-
// only rootfs, and no setuid bit left on su.
func TestImagesBuildPackagesGivesAgentPythonNodeGit(t *testing.T) {
	needMmdebstrap(t)
	c, ctx := ctrtest.Connect(t)
	name := "ceval.local/test-cli-packages:latest"
	t.Cleanup(func() { _ = c.ImageService().Delete(context.WithoutCancel(ctx), name) })
	r := ceval(t, "images", "build", "--namespace", ctrtest.Namespace, name, "--packages", "python3,nodejs,git")
	if r.code != 0 {
		t.Fatalf("images build: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "python3=3.") || !strings.Contains(r.stdout, "/usr/bin/su (setuid)") {
		t.Errorf("images build does not report versions and removed bits:\n%s", r.stdout)
	}
	r = ceval(t, "sandbox", "exec", "--namespace", ctrtest.Namespace, "--image", name, "--timeout", "60s", "--", "sh", "-c",
		`set -e; python3 -c 'print(1+1)'; node -e 'console.log(6*7)'; id -u; id -g; cd /workspace; git init -q .; git -c user.name=a -c user.email=a@b commit -q --allow-empty -m m; git log --oneline | wc -l; stat -c %a /usr/bin/su; touch /usr/bin/x 2>/dev/null || echo rofs; grep CapEff /proc/self/status`)
	want := "2\n42\n2000\n2000\n1\n755\nrofs\nCapEff:\t0000000000000000\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("sandbox exec: exit %d\nstdout %q\nwant   %q\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
}

// TestRunTaskWithSandboxPackagesIsGraded runs examples/python-packages end to end: the
// package image built (or taken from the cache) for sandbox.packages, a Python agent that
// runs unittest and git, and the grade.
func TestRunTaskWithSandboxPackagesIsGraded(t *testing.T) {
	needMmdebstrap(t)
	c, ctx := ctrtest.Connect(t)
	path := "../../examples/python-packages/task.yaml"
	tk, err := task.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.ImageService().Delete(context.WithoutCancel(ctx), tk.Sandbox.Image) })
	runs := t.TempDir()
	r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, path)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	results, _ := filepath.Glob(filepath.Join(runs, "*", "default", "python-packages", "1", "result.json"))
	if len(results) != 1 {
		t.Fatalf("no result.json under %s", runs)
	}
	data, _ := os.ReadFile(results[0])
	for _, want := range []string{`"status": "SUCCESS"`, `"name": "` + tk.Sandbox.Image + `"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("result.json lacks %s:\n%s", want, data)
		}
	}
}

// Bad requests are refused before connecting to containerd or starting a build.
func TestImagesBuildRefusesBadRequestsBeforeConnecting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ceval.local/x:1"}, "give either --packages (and/or --pip) or -f Dockerfile"},
		{[]string{"ceval.local/x:1", "--packages", "git", "-f", "Dockerfile"}, "give either --packages"},
		{[]string{"ceval.local/x:1", "--packages", "git", "ctxdir"}, "a CONTEXT directory goes only with -f Dockerfile"},
	} {
		r := ceval(t, append([]string{"images", "build", "--containerd-address", "/nonexistent/containerd.sock"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// TestSelftestAgainstDebianAgentImageScoresZero: every hardening holds in the Debian agent
// image (a real userland: GNU tools, python3, node, the CLIs) as in the busybox default:
// the whole attack suite runs in it and each attack is blocked or detected, score 0.
func TestSelftestAgainstDebianAgentImageScoresZero(t *testing.T) {
	needMmdebstrap(t)
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() {
		for _, n := range []string{images.AgentName, images.DefaultName} {
			_ = c.ImageService().Delete(context.WithoutCancel(ctx), n)
		}
	})
	r := ceval(t, "images", "build-agent", "--namespace", ctrtest.Namespace)
	if r.code != 0 {
		t.Fatalf("build-agent: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = ceval(t, "selftest", "--json", "--namespace", ctrtest.Namespace, "--image", images.AgentName, "--runs-dir", t.TempDir())
	rep := selftestReport(t, r)
	if len(rep.Attacks) < 40 {
		t.Fatalf("%d attacks ran, want the whole suite", len(rep.Attacks))
	}
	for _, a := range rep.Attacks {
		if a.Outcome != string(selftest.Blocked) && a.Outcome != string(selftest.Detected) || a.Score != 0 {
			t.Errorf("%s in %s: %s, score %.2f: %s", a.Name, images.AgentName, a.Outcome, a.Score, a.Detail)
		}
	}
	if r.code != 0 {
		t.Errorf("selftest exit %d\n%s", r.code, r.stderr)
	}
}
