package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

// TestHarborCausesImportBuildAndAuditOK is issue 40's "Must show" for the Harbor tasks
// written here, one per cause (importer/testdata/harbor-causes: data in the WORKDIR, outputs
// in /tmp and /output, ENV PATH, ENTRYPOINT, WORKDIR /tmp and /task, reward.json's named
// rewards, a task id with underscores): each imports, its image builds with the command the
// import prints, and `ceval audit` says ok: the oracle (solution/solve.sh) passes and the
// null agent and every cheat fail.
func TestHarborCausesImportBuildAndAuditOK(t *testing.T) {
	if _, err := exec.LookPath("buildah"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and buildah is missing: apt-get install buildah (make setup)")
		}
		t.Skip("buildah missing")
	}
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	dirs, _ := filepath.Glob("../../importer/testdata/harbor-causes/*")
	if len(dirs) < 8 {
		t.Fatalf("harbor-causes holds %d tasks, want 8", len(dirs))
	}
	out := t.TempDir()
	r := ceval(t, append([]string{"import", "harbor", "--out", out}, dirs...)...)
	if r.code != 0 {
		t.Fatalf("import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"outputs-tmp-output/tests/test.sh:4: note: sandbox.outputs: the tests read /output/status.txt",
		"entrypoint/environment/Dockerfile:4: note: ENTRYPOINT: became a setup step",
		"env-path/environment/Dockerfile:4: note: ENV: PATH, FORTUNE_STYLE",
	} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("import's report lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	// The tasks' base: the default image with bash (harbor_reward runs test.sh with bash, as
	// Harbor does; the cookbook's ubuntu bases have it).
	buildDefaultWithBash(t, ctx, c, images.DefaultName)
	// Each image as the import says to build it: the task finds it under the name it gives. A
	// Dockerfile that only names its base (FROM, WORKDIR) becomes that base, built nothing.
	build := regexp.MustCompile(`build it first with ceval images build (\S+) -f (\S+)`)
	builds := build.FindAllStringSubmatch(r.stdout+r.stderr, -1)
	baseOnly := strings.Count(r.stdout+r.stderr, "its only FROM")
	if len(builds) == 0 || len(builds)+baseOnly != len(dirs) {
		t.Fatalf("%d build commands and %d base images printed for %d tasks", len(builds), baseOnly, len(dirs))
	}
	for _, b := range builds {
		if r := ceval(t, "images", "build", "--namespace", ctrtest.Namespace, b[1], "-f", b[2]); r.code != 0 {
			t.Fatalf("images build %s: exit %d\n%s%s", b[1], r.code, r.stdout, r.stderr)
		}
		t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, "docker.io/"+b[1]+":latest") })
	}
	tasks, _ := filepath.Glob(filepath.Join(out, "*", "task.yaml"))
	r = ceval(t, append([]string{"audit", "--namespace", ctrtest.Namespace, "--json", "--runs-dir", t.TempDir(), "-j", "2"}, tasks...)...)
	var reps []struct {
		TaskID  string   `json:"task_id"`
		Verdict string   `json:"verdict"`
		Reasons []string `json:"reasons"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &reps); err != nil {
		t.Fatalf("audit: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if len(reps) != len(dirs) {
		t.Errorf("%d reports for %d tasks", len(reps), len(dirs))
	}
	for _, rep := range reps {
		if rep.Verdict != "ok" {
			t.Errorf("%s: audit verdict %s: %s", rep.TaskID, rep.Verdict, strings.Join(rep.Reasons, "; "))
		}
	}
	if r.code != 0 {
		t.Errorf("audit: exit %d, want 0\n%s", r.code, r.stderr)
	}
}
