package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/record"
)

// rootlessQuickStart returns the command lines of docs/rootless.md's quick start (the first sh
// block of the document, above its first section), comments and blank lines left out.
func rootlessQuickStart(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../docs/rootless.md")
	if err != nil {
		t.Fatal(err)
	}
	sec, _, _ := strings.Cut(string(data), "\n## ")
	_, block, ok := strings.Cut(sec, "```sh\n")
	if block, _, ok = strings.Cut(block, "\n```"); !ok {
		t.Fatal("docs/rootless.md has no sh block above its first section (the quick start)")
	}
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// docUser is the user the rootless quick start is written for.
var docUser = regexp.MustCompile(`\balice\b`)

// TestDocsRootlessQuickStartWorksAsWritten runs docs/rootless.md's quick start, its own
// lines, as the user the rootless daemon runs as (.ci/run: once with the cgroup subtree root
// delegated, once without) in a fresh home (no wasm cache, no config: the first run there was
// once refused) and a checkout of its examples and scripts, with nothing in the environment
// the quick start does not set: no CEVAL_ROOTLESS_ADDRESS, no CEVAL_* but its
// CEVAL_CONTAINERD_ADDRESS. The admin's line is root's (.ci/run does its two steps); alice's
// lines start a daemon in that home, ask doctor, and run the hello example in each limit mode.
func TestDocsRootlessQuickStartWorksAsWritten(t *testing.T) {
	lines := rootlessQuickStart(t)
	if os.Geteuid() == 0 {
		t.Skip("the rootless quick start runs as the daemon's unprivileged user (.ci/run runs it so)")
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	subuid, _ := os.ReadFile("/etc/subuid")
	_, _, _, idErr := launcher.SubordinateIDs(subuid, u.Username, os.Getuid(), 1<<16)
	rootlesskit, lookErr := exec.LookPath("rootlesskit")
	if idErr != nil || lookErr != nil {
		msg := "the admin's part of the quick start is missing (as root: scripts/containerd.sh rootless-start " + u.Username + " DIR)"
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %s: %v %v", msg, idErr, lookErr)
		}
		t.Skipf("%s: %v %v", msg, idErr, lookErr)
	}
	delegated, _ := launcher.DelegatedCgroup(cgroupRoot, u.Username)

	// A home as useradd makes one (traversable: the runs' inits reach their rootfs in it).
	base, err := os.MkdirTemp("", "ceval-quickstart-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	checkout := filepath.Join(home, "ceval")
	bin := filepath.Join(home, "bin")
	for _, d := range []string{home, checkout, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"examples", "scripts"} {
		if err := os.CopyFS(filepath.Join(checkout, d), os.DirFS(filepath.Join("..", "..", d))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(cevalBin, filepath.Join(bin, "ceval")); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "USER=" + u.Username, "LOGNAME=" + u.Username, "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}
	sh := func(line string) cliResult {
		cmd := exec.Command("bash", "-c", line)
		cmd.Dir, cmd.Env = checkout, env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return cliResult{cmd.ProcessState.ExitCode(), out.String(), errb.String()}
	}

	var daemonDir, adminDir, userDir string
	seen := map[string]bool{}
	for _, written := range lines {
		line := docUser.ReplaceAllString(written, u.Username)
		f := strings.Fields(line)
		switch {
		case f[0] == "sudo" && slices.Contains(f, "setup-rootless"):
			seen["admin"] = true // root's: .ci/run runs its steps, rootless-start and rootless setup
			adminDir = docUser.ReplaceAllString(written, "USER")
			continue
		case slices.Contains(f, "rootless-start"):
			if len(f) != 4 || f[0] != "scripts/containerd.sh" || f[2] != u.Username || !strings.HasPrefix(f[3], "~/") {
				t.Fatalf("docs/rootless.md: %q: want scripts/containerd.sh rootless-start alice ~/DIR", written)
			}
			userDir = strings.TrimPrefix(f[3], "~/")
			daemonDir = filepath.Join(home, userDir)
			t.Cleanup(func() { stopQuickStartDaemon(t, sh, line, rootlesskit, base) })
		}
		words := slices.DeleteFunc(slices.Clone(f), func(w string) bool { return strings.HasPrefix(w, "CEVAL_") && strings.Contains(w, "=") })
		t.Run(strings.Join(words, " "), func(t *testing.T) {
			if !strings.HasPrefix(line, "scripts/") {
				for _, kv := range f {
					if name, _, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, "CEVAL_") && name != "CEVAL_CONTAINERD_ADDRESS" {
						t.Fatalf("docs/rootless.md: %q sets %s: the quick start promises the containerd address is all ceval needs", written, name)
					}
				}
			}
			runs, _ := filepath.Glob(filepath.Join(checkout, "runs", "*", "*", "*", "*", record.ResultFile))
			r := sh(line)
			switch {
			case slices.Contains(f, "rootless-start"):
				seen["start"] = true
				if r.code != 0 || strings.TrimSpace(r.stdout) != filepath.Join(daemonDir, "containerd.sock") {
					t.Fatalf("exit %d, want 0 and the socket printed\n%s%s", r.code, r.stdout, r.stderr)
				}
			case slices.Contains(f, "doctor"):
				seen["doctor"] = true
				want := "strict mode"
				if delegated == "" {
					want = "ceval rootless setup --user " + u.Username
				}
				if !strings.Contains(r.stdout, "ok    rootless daemon") || !strings.Contains(r.stdout, want) {
					t.Fatalf("exit %d: doctor does not find the daemon or does not say %q\n%s%s", r.code, want, r.stdout, r.stderr)
				}
			case slices.Contains(f, "run"):
				allow := slices.Contains(f, "--allow-rlimit-limits")
				seen["run"] = true
				seen["run allow="+map[bool]string{true: "rlimit", false: "none"}[allow]] = true
				if delegated == "" && !allow {
					if r.code != exitInvalid || !strings.Contains(r.stderr, "ceval rootless setup --user "+u.Username) || !strings.Contains(r.stderr, "--allow-rlimit-limits") {
						t.Fatalf("no cgroup subtree, no opt-in: exit %d, want %d with both fixes\n%s", r.code, exitInvalid, r.stderr)
					}
					return
				}
				if r.code != 0 {
					t.Fatalf("exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
				}
				res := newReadmeResult(t, checkout, runs)
				if res.Status != "SUCCESS" || res.Score != 1 {
					t.Fatalf("status %s score %v: %s", res.Status, res.Score, res.Error)
				}
				wantLimitsBy(t, res, delegated != "")
				wantHostIDsInSubordinateRange(t, res.Isolation)
			default:
				t.Fatalf("docs/rootless.md: %q: this test does not know what the line should do; teach it", written)
			}
		})
	}
	// The admin's daemon is the one alice's line restarts.
	if want := "make setup-rootless ROOTLESS_USER=USER ROOTLESS_DIR=/home/USER/" + userDir; !strings.Contains(adminDir, want) {
		t.Errorf("docs/rootless.md: the admin's line %q does not say %q", adminDir, want)
	}
	for _, want := range []string{"admin", "start", "doctor", "run allow=none", "run allow=rlimit"} {
		if !seen[want] {
			t.Errorf("docs/rootless.md's quick start has no line for %q (lines: %q)", want, lines)
		}
	}
}

// newReadmeResult reads the one result.json under checkout's runs that is not in before.
func newReadmeResult(t *testing.T, checkout string, before []string) *record.Result {
	t.Helper()
	all, _ := filepath.Glob(filepath.Join(checkout, "runs", "*", "*", "*", "*", record.ResultFile))
	all = slices.DeleteFunc(all, func(p string) bool { return slices.Contains(before, p) })
	if len(all) != 1 {
		t.Fatalf("want one new result.json under %s/runs, found %v", checkout, all)
	}
	data, err := os.ReadFile(all[0])
	if err != nil {
		t.Fatal(err)
	}
	var res record.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("%s: %v", all[0], err)
	}
	return &res
}

// stopQuickStartDaemon stops the daemon the quick start's start line started (with the quick start's
// rootless-stop, which fails if anything is left in its user namespace) and removes the home:
// through rootlesskit, since the runs' and the WASM worker's files there belong to the user's
// subordinate IDs.
func stopQuickStartDaemon(t *testing.T, sh func(string) cliResult, start, rootlesskit, base string) {
	if r := sh(strings.Replace(start, "rootless-start", "rootless-stop", 1)); r.code != 0 {
		t.Errorf("rootless-stop: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cmd := exec.Command(rootlesskit, "--state-dir="+filepath.Join(base, "rootlesskit"), "rm", "-rf", filepath.Join(base, "home"))
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + base}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("remove the quick start's home: %v: %s", err, out)
	}
	if err := os.RemoveAll(base); err != nil {
		t.Errorf("the quick start's home left behind: %v", err)
	}
}
