package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/mockd"
	"ceval.dev/ceval/record"
)

const ghMockFixture = `version: 1
responses:
  - argv: [pr, list]
    stdout: "#7 fix the flaky test\n"
  - argv: [pr, list, --state, open, --limit, "5"]
    match: normalized
    stdout: "#7 open only\n"
  - argv: [pr, create]
    stdin: "body\n"
    stdout: "created #8\n"
  - argv: [pr, view, "99"]
    stdout: "SECRET %s\n"
`

// The agent calls the mocked gh several ways (plain, normalized flags, piped stdin, login
// shells, an unmatched call), writes what it got, and then hunts for the fixture: its canary
// sits in a response it never triggers.
func TestAgentGetsFixtureAnswersButCannotReadTheFixture(t *testing.T) {
	cn := canary(t)
	script := `cd /workspace
gh pr list > prs.txt
gh pr list --limit=5 --state open > open.txt
echo body | gh pr create > created.txt
sh -lc 'gh pr list' > login.txt
env -i /bin/sh -lc 'gh pr list' > login-noenv.txt
gh pr merge 1 2> unmatched.txt; echo "unmatched=$?" >> codes.txt
ls -la /run/ceval /usr/local/bin > listing.txt 2>&1
cat /proc/self/mountinfo > mountinfo.txt
P=CEVAL-CAN; P="${P}ARY-"
for d in /*/ /.*/ /dev/shm/ /dev/mqueue/; do
  case "$d" in /proc/|/sys/|/dev/|/./|/../) continue;; esac
  grep -rsh "$P" "$d" 2>/dev/null >> found.txt
done
for p in /proc/[0-9]*; do cat $p/environ $p/cmdline 2>/dev/null | tr '\0' '\n' | grep -h "$P" >> found.txt; done
find / -name 'gh.yaml' 2>/dev/null | grep -v '^/proc' >> found.txt
true`
	criteria := "  - {type: file_contains, path: prs.txt, includes: [\"#7 fix the flaky test\"]}\n" +
		"  - {type: file_contains, path: open.txt, includes: [\"#7 open only\"]}\n" +
		"  - {type: file_contains, path: created.txt, includes: [\"created #8\"]}\n" +
		"  - {type: file_contains, path: login.txt, includes: [\"#7 fix the flaky test\"]}\n" +
		"  - {type: file_contains, path: login-noenv.txt, includes: [\"#7 fix the flaky test\"]}\n" +
		"  - {type: file_contains, path: codes.txt, includes: [\"unmatched=2\"]}\n" +
		"  - {type: file_contains, path: unmatched.txt, includes: [\"gh\", \"no fixture matched\"]}\n" +
		"  - {type: cli_called, tool: gh, argv: {positional: [pr, list], flags: {--state: {equals: open}, --limit: {equals: \"5\"}}}, max_count: 1}\n" +
		"  - {type: cli_called, tool: gh, argv: {positional: [pr, list]}, min_count: 4, max_count: 4}\n" +
		"  - {type: cli_called, tool: gh, argv: {flags: {--web: {present: true}}}, min_count: 0, max_count: 0}\n" +
		"  - {type: command_executed, pattern: \"^gh pr create$\"}\n"
	res, err := runTask(t, agentTask("ghcalls", script, criteria, "protected_mocks:\n  - {tool: gh, fixture: mocks/gh.yaml, max_requests: 20}\n"),
		map[string]string{"mocks/gh.yaml": strings.Replace(ghMockFixture, "%s", cn, 1)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(res.Dir, record.WorkspaceDir)
	if res.Status != "SUCCESS" {
		for _, c := range res.Criteria {
			if !c.Passed {
				t.Errorf("criterion failed: %+v", c)
			}
		}
		for _, f := range []string{"prs.txt", "unmatched.txt", "listing.txt"} {
			b, _ := os.ReadFile(filepath.Join(ws, f))
			t.Logf("%s:\n%s", f, b)
		}
		b, _ := os.ReadFile(filepath.Join(res.Dir, record.StderrFile))
		t.Logf("agent stderr:\n%s", b)
	}
	found, _ := os.ReadFile(filepath.Join(ws, "found.txt"))
	if len(found) > 0 {
		t.Errorf("BREACH: the agent found fixture material:\n%s", found)
	}
	mountinfo, _ := os.ReadFile(filepath.Join(ws, "mountinfo.txt"))
	if strings.Contains(string(mountinfo), "gh.yaml") || strings.Contains(string(mountinfo), "mocks/") {
		t.Errorf("the fixture is in a mount:\n%s", mountinfo)
	}
	if !strings.Contains(string(mountinfo), " /run/ceval ro,") {
		t.Errorf("/run/ceval is not a read-only mount:\n%s", mountinfo)
	}
	calls, err := mockd.ReadCalls(filepath.Join(res.Dir, record.MockCallsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 6 {
		t.Errorf("%d calls logged, want 6: %+v", len(calls), calls)
	}
	if len(calls) > 0 && (calls[0].Tool != "gh" || strings.Join(calls[0].Argv, " ") != "pr list" || calls[0].Cwd != "/workspace" || calls[0].Rule == nil || *calls[0].Rule != 0) {
		t.Errorf("first call %+v", calls[0])
	}
	m := readResult(t, res)
	mocks, _ := m["mocks"].(map[string]any)
	if st, _ := mocks["stats"].(map[string]any); st == nil || st["calls"] != 5.0 || st["unmatched"] != 1.0 {
		t.Errorf("result.json mocks = %v", m["mocks"])
	}
	if _, err := os.Stat(filepath.Join(res.Dir, mockSubdir)); err == nil {
		t.Error("the socket directory outlived the run")
	}
}
