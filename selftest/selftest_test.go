package selftest

import (
	"bytes"
	"compress/zlib"
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/importer"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// suiteNames is the suite as it must ship. Removing an attack means removing it here too,
// so an attack cannot silently stop existing.
var suiteNames = []string{
	"agent-judge-codex-forgery", "agent-judge-config", "agent-judge-over-context", "agent-judge-run-forgery", "agent-judge-snapshot-flood",
	"author-git-host-alternates", "author-git-host-objects", "author-hostile-registry", "author-hostile-wheel", "author-material-swap", "author-service-hostnet",
	"canary-ceval-binary", "canary-env-and-home", "canary-find-name", "canary-grep-filesystem",
	"canary-mountinfo-paths", "canary-path-guess", "canary-proc-cmdline", "canary-proc-environ",
	"canary-proc-fd", "canary-proc-mem", "canary-proc-root-cwd", "canary-solution",
	"escape-capabilities", "escape-engine-socket", "escape-host-fd", "escape-host-mounts",
	"escape-masked-proc", "escape-proc-self-exe", "escape-write-rootfs",
	"fill-dev-shm", "fill-home", "fill-output", "fill-tmp", "fill-workspace",
	"fool-conftest-hooks", "fool-dash-filenames", "fool-deep-tree", "fool-entry-cap-hides-file", "fool-fifo",
	"fool-forged-results", "fool-hardlink-host", "fool-json-nesting", "fool-million-files",
	"fool-oversize-hidden-todo", "fool-path-shape", "fool-sparse-10g", "fool-symlink-host", "fool-trojan-path",
	"gateway-echoed-key", "gateway-exit-mid-call", "gateway-forged-tool-calls", "gateway-forged-usage",
	"gateway-nested-content", "gateway-other-endpoints",
	"gateway-premium-options", "gateway-provoked-4xx", "gateway-real-key", "gateway-timeout-mid-call",
	"git-later-commit", "git-nested-repo", "git-other-branch", "git-reflog", "git-stash", "git-tag",
	"iterate-feedback-leak", "iterate-feedback-probe",
	"judge-over-context",
	"kernel-syscalls",
	"load-alias-chain-defaults", "load-alias-chain-variants", "load-criteria-500k-aliases", "load-criteria-alias-bomb",
	"load-experiment-dotdot", "load-experiment-fifo", "load-experiment-hardlink", "load-experiment-quotes-file",
	"load-experiment-rootlink", "load-experiment-symlinked-glob", "load-experiment-usr-glob",
	"mock-enumerate-argv", "mock-grep-fixture", "mock-oversized-request", "mock-slow-clients",
	"net-connect-external", "net-dns", "net-host-services",
	"output-symlink-host",
	"plugin-source-grading", "plugin-write-tree",
	"priv-af-packet", "priv-cgroup-escape", "priv-chroot", "priv-hostname-time", "priv-kernel-log",
	"priv-kernel-module", "priv-mknod", "priv-mount", "priv-net-admin", "priv-nsenter",
	"priv-proc-sys-write", "priv-proc1-root", "priv-raw-socket", "priv-setpriv-caps", "priv-setuid",
	"priv-su", "priv-sysrq-trigger", "priv-unshare-namespaces", "priv-user-namespace",
	"quota-shared-uid",
	"service-agent-attacks", "service-mcp-stdio",
	"steps-break-after-agent", "steps-files-symlink",
	"survive-double-fork", "survive-fork-bomb", "survive-memory-bomb", "survive-setsid", "survive-sigterm",
	"survive-supervisor-death",
	"verifier-agent-home", "verifier-disk-filler", "verifier-fork-bomb", "verifier-harbor-reward", "verifier-late-daemon",
	"verifier-network", "verifier-package-shadow", "verifier-pkg-shadow-root", "verifier-pytest-forge", "verifier-python-start", "verifier-root-escape", "verifier-undeclared-ref", "wasm-package-shadow", "wasm-pycache-forge", "wasm-pytest-hijack", "wasm-python-escape", "wasm-stdlib-shadow",
	"wasm-symlink-host", "wasm-tmp-symlink", "wasm-trojan-path",
}

func TestSuiteShipsEveryListedAttackAndAtLeast40(t *testing.T) {
	all, err := Attacks()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range all {
		got = append(got, a.Name)
		if a.Tried == "" {
			t.Errorf("%s: no description (the row's \"tried\")", a.Name)
		}
	}
	if strings.Join(got, " ") != strings.Join(suiteNames, " ") {
		t.Errorf("suite is\n%v\nwant\n%v", got, suiteNames)
	}
	if len(got) < 40 {
		t.Errorf("%d attacks, want at least 40", len(got))
	}
}

func TestSelectRefusesUnknownNames(t *testing.T) {
	_, err := Select([]string{"priv-su", "no-such-attack"})
	var ue *UnknownAttackError
	if !errors.As(err, &ue) || len(ue.Names) != 1 || ue.Names[0] != "no-such-attack" {
		t.Fatalf("err = %v", err)
	}
	got, err := Select([]string{"priv-su", "fill-tmp"})
	if err != nil || len(got) != 2 || got[0].Name != "fill-tmp" {
		t.Fatalf("got %v, %v", got, err)
	}
}

// Every attack is an ordinary, valid task whose grading material (and only that) holds the
// run's canary, rewarded by the criteria, and whose script sources lib.sh.
func TestEveryAttackIsAValidTaskWithTheCanaryOnlyInItsGradingMaterial(t *testing.T) {
	all, err := Attacks()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, a := range all {
		if a.loader != nil {
			continue // no task to run: see loader_test.go
		}
		t.Run(a.Name, func(t *testing.T) {
			if a.Needs != "" {
				if _, err := exec.LookPath(a.Needs); err != nil {
					t.Skipf("needs %s", a.Needs)
				}
			}
			canary := NewCanary()
			dir := filepath.Join(root, a.Name)
			if err := materialize(a, dir, canary); err != nil {
				t.Fatal(err)
			}
			tk, err := task.Load(filepath.Join(dir, "task.yaml"))
			if s := setups[a.Name]; err != nil && s.refused != "" && strings.Contains(err.Error(), s.refused) {
				return // a hostile task author's file: refused at validation, which blocks it
			}
			if err != nil {
				t.Fatal(err)
			}
			defer tk.Close()
			// RUN_ID-default-TASK-1 must fit the sandbox's 64-character container ID.
			if len(tk.ID) > 26 {
				t.Errorf("task_id %q is longer than 26 characters", tk.ID)
			}
			if tk.Reference == nil || tk.Agent == nil || tk.Agent.Type != task.AgentCommand {
				t.Errorf("want a command agent and a reference directory: %+v", tk)
			}
			if tk.Sandbox.Limits.Timeout > 30e9 || tk.Sandbox.Network != policy.NetworkNone {
				t.Errorf("limits %+v network %s: keep attacks short and offline", tk.Sandbox.Limits, tk.Sandbox.Network)
			}
			data, _ := os.ReadFile(filepath.Join(dir, "task.yaml"))
			if !strings.Contains(string(data), canary) || strings.Contains(string(data), "{{") {
				t.Errorf("task.yaml lacks the canary or keeps a placeholder")
			}
			ref, _ := os.ReadFile(filepath.Join(dir, "reference", "canary.txt"))
			if !strings.Contains(string(ref), canary) {
				t.Error("reference/canary.txt lacks the canary")
			}
			rewards := map[string]bool{}
			for _, c := range tk.Criteria {
				switch s := c.Spec.(type) { // found.txt may be an output's (/output/found.txt)
				case *task.FileExistsSpec:
					rewards[path.Base(s.Path)] = true
				case *task.FileContainsSpec:
					rewards[path.Base(s.Path)] = true
				case *task.JSONCheckSpec:
					rewards[path.Base(s.Path)] = true
				}
			}
			if !rewards["proof.txt"] || !rewards["found.txt"] {
				t.Errorf("criteria must reward proof.txt and found.txt: %v", rewards)
			}
			for _, f := range []string{"attack.sh", "lib.sh"} {
				s, err := os.ReadFile(filepath.Join(dir, "template", f))
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(s, []byte(canary)) || bytes.Contains(s, []byte(canaryPrefix)) || bytes.Contains(s, []byte("{{")) {
					t.Errorf("%s holds the canary, its prefix or a placeholder", f)
				}
			}
			script, _ := os.ReadFile(filepath.Join(dir, "template", "attack.sh"))
			if !strings.HasPrefix(string(script), ". ./lib.sh\n") || !strings.Contains(string(script), "ATTEMPT") && !strings.Contains(string(script), "attempt ") && !strings.Contains(string(script), "git_hunt") {
				t.Errorf("attack.sh must source lib.sh and log its attempts")
			}
		})
	}
}

func TestCanariesDifferPerRun(t *testing.T) {
	a, b := NewCanary(), NewCanary()
	if a == b || !strings.HasPrefix(a, canaryPrefix) || len(a) != len(canaryPrefix)+32 {
		t.Fatalf("canaries %q %q", a, b)
	}
}

func TestParseLogReadsAttemptsAndExitCodes(t *testing.T) {
	log := "ATTEMPT mount tmpfs: mount -t tmpfs none /tmp/m\nmount: permission denied (are you root?)\n\nRC mount tmpfs 1\n" +
		"ATTEMPT read the prompt: cat prompt.md\nno newline at the end\nRC read the prompt 0\n" +
		"ATTEMPT gone: gone\nsh: gone: not found\n\nRC gone 127\nPROOF it worked\n"
	l := parseLog(log)
	if strings.Join(l.attempts, "|") != "mount tmpfs|read the prompt|gone" {
		t.Errorf("attempts %q", l.attempts)
	}
	if l.rc["mount tmpfs"] != 1 || l.rc["read the prompt"] != 0 || l.rc["gone"] != 127 {
		t.Errorf("rc %v", l.rc)
	}
	if len(l.missing) != 2 || len(l.proofs) != 1 {
		t.Errorf("missing %q proofs %q", l.missing, l.proofs)
	}
}

func result(status string, score float64, passed bool, limits []string, notes []record.SnapshotNote) *record.Result {
	r := &record.Result{Isolation: &record.Attestation{}, LimitsHit: limits}
	r.Status, r.Score, r.SnapshotNotes = status, score, notes
	r.Criteria = []grader.CriterionResult{{Type: "file_exists", Passed: passed}, {Type: "file_contains"}}
	return r
}

func TestClassify(t *testing.T) {
	denied := "ATTEMPT mount: mount\nmount: permission denied\n\nRC mount 1\n"
	for _, tc := range []struct {
		name string
		e    evidence
		want Outcome
	}{
		{"denied attempt, nothing rewarded", evidence{res: result("FAILURE", 0, false, nil, nil), log: denied}, Blocked},
		{"harmless attempt that ran", evidence{res: result("FAILURE", 0, false, nil, nil), log: "ATTEMPT ln: ln -s / x\n\nRC ln 0\n"}, Blocked},
		{"rewarding criterion passed", evidence{res: result("FAILURE", 0, true, nil, nil), log: denied}, Breach},
		{"score above zero", evidence{res: result("FAILURE", 0.5, false, nil, nil), log: denied}, Breach},
		{"pids past the attested limit", evidence{res: func() *record.Result {
			r := result("FAILURE", 0, false, nil, nil)
			r.Isolation.PidsMax, r.Resources.PeakPids = "64", 65
			return r
		}(), log: denied}, Breach},
		{"pids at the attested limit", evidence{res: func() *record.Result {
			r := result("FAILURE", 0, false, nil, nil)
			r.Isolation.PidsMax, r.Resources.PeakPids = "64", 64
			return r
		}(), log: denied}, Blocked},
		{"canary leaked", evidence{res: result("FAILURE", 0, false, nil, nil), log: denied, leaks: []string{"the canary is in agent.stdout.log"}}, Breach},
		{"grading ERROR", evidence{res: result("ERROR", 0, false, nil, nil), log: denied}, Breach},
		{"run failed after the agent started", evidence{res: result("ERROR", 0, false, nil, nil), runErr: errors.New("processes remained")}, Breach},
		{"run failed before the agent started", evidence{runErr: errors.New("containerd down")}, Errored},
		{"command missing", evidence{res: result("FAILURE", 0, false, nil, nil), log: "ATTEMPT x: x\nsh: x: not found\n\nRC x 127\n"}, Errored},
		{"applet missing", evidence{res: result("FAILURE", 0, false, nil, nil), log: "ATTEMPT x: x\nx: applet not found\n\nRC x 1\n"}, Errored},
		{"option unknown", evidence{res: result("FAILURE", 0, false, nil, nil), log: "ATTEMPT u: unshare -C\nunshare: invalid option -- 'C'\n\nRC u 1\n"}, Errored},
		{"no attempt logged", evidence{res: result("FAILURE", 0, false, nil, nil), log: "hello\n"}, Errored},
		{"attempt never finished, nothing flagged", evidence{res: result("FAILURE", 0, false, nil, nil), log: "ATTEMPT bomb\n"}, Errored},
		{"timeout", evidence{res: result("TIMEOUT", 0, false, []string{"timeout 2s"}, nil), log: "ATTEMPT bomb\n"}, Detected},
		{"limit hit", evidence{res: result("FAILURE", 0, false, []string{"workspace disk limit reached"}, nil), log: denied}, Detected},
		{"snapshot note", evidence{res: result("FAILURE", 0, false, nil, []record.SnapshotNote{{Path: "f", Reason: "fifo skipped"}}), log: denied}, Detected},
	} {
		got, _, detail := classify(tc.e)
		if got != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, got, detail, tc.want)
		}
	}
}

func TestSnapshotScanFindsCanaryInCompressedGitObjectsAndSetuidBits(t *testing.T) {
	canary := NewCanary()
	dir := t.TempDir()
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte("blob 50\x00the answer is " + canary))
	zw.Close()
	obj := filepath.Join(dir, "project", ".git", "objects", "pack", "pack-1.pack")
	os.MkdirAll(filepath.Dir(obj), 0o755)
	os.WriteFile(obj, append([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x01\x95\x0a"), z.Bytes()...), 0o644)
	if leaks := scanSnapshot(dir, canary); len(leaks) != 1 || !strings.Contains(leaks[0], "compressed git object") {
		t.Fatalf("leaks = %q", leaks)
	}
	os.Remove(obj)
	os.WriteFile(filepath.Join(dir, "id"), []byte("x"), 0o755)
	os.Chmod(filepath.Join(dir, "id"), 0o755|os.ModeSetuid)
	os.WriteFile(filepath.Join(dir, "plain.txt"), []byte("it is "+canary), 0o644)
	leaks := scanSnapshot(dir, canary)
	if len(leaks) != 2 || !strings.Contains(strings.Join(leaks, ";"), "setuid") {
		t.Fatalf("leaks = %q", leaks)
	}
}

// The host-built templates hold the answer where HEAD's history does not reach.
func TestGitTemplatesHideTheAnswerOutsideHEAD(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, s := range []string{"later-commit", "other-branch", "tag", "reflog", "stash"} {
		t.Run(s, func(t *testing.T) {
			dir := t.TempDir()
			canary := NewCanary()
			if err := buildGitTemplate(dir, s, canary); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("git", "-C", dir, "log", "-p", "HEAD").CombinedOutput()
			if err != nil || strings.Contains(string(out), canary) {
				t.Errorf("HEAD's history holds the answer (or git failed: %v)", err)
			}
		})
	}
}

// A run's hang guard starts past every budget its task declares: wasm-pytest-hijack's
// pytest criterion may take 300 s, iterate-feedback-leak runs its agent and grades twice,
// steps-break-after-agent has an after_agent step. The guard used to start at the agent's
// timeout, and cut wasm-pytest-hijack's grading on a loaded machine (CPython compiled cold).
func TestHangGuardStartsPastTheBudgetsTheTaskDeclares(t *testing.T) {
	suite, err := Attacks()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{
		"wasm-pytest-hijack":      20*time.Second + 300*time.Second,
		"iterate-feedback-leak":   2 * (20*time.Second + task.DefaultCheckTimeout),
		"steps-break-after-agent": 20*time.Second + task.DefaultStepTimeout + 20*time.Second,
	}
	for _, a := range suite {
		w, ok := want[a.Name]
		if !ok {
			continue
		}
		delete(want, a.Name)
		dir := filepath.Join(t.TempDir(), a.Name)
		if err := materialize(a, dir, NewCanary()); err != nil {
			t.Fatal(err)
		}
		tk, err := task.Load(filepath.Join(dir, "task.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if got := runBudget(tk); got != w {
			t.Errorf("%s: budget %v, want %v", a.Name, got, w)
		}
		tk.Close()
	}
	for name := range want {
		t.Errorf("attack %s is not in the suite", name)
	}
}

// verifier-harbor-reward grades with the very command ceval import harbor writes.
func TestHarborRewardForgeRunsTheImportersCommand(t *testing.T) {
	data, err := suite.ReadFile("attacks/verifier-harbor-reward/task.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "command: '"+importer.HarborVerifierCommand+"'\n") || !strings.Contains(string(data), "harbor_reward: true\n") {
		t.Errorf("the attack's criterion is not the importer's (harbor_reward: true, command: importer.HarborVerifierCommand %q): copy them into the task", importer.HarborVerifierCommand)
	}
}
