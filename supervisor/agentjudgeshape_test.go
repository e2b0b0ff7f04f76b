package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// shapeSnapshot snapshots the workspace build makes, under lim.
func shapeSnapshot(t *testing.T, lim snapshot.Limits, build func(ws string)) *snapshot.Snapshot {
	t.Helper()
	ws := t.TempDir()
	build(ws)
	s, err := snapshot.Take(ws, filepath.Join(t.TempDir(), "snap"), lim)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gradeAgentJudge grades one agent_judge over s with the run's own agentJudges: a workspace
// it cannot hand whole to the judge is refused before any sandbox starts (no containerd
// needed), so these cases never reach one.
func gradeAgentJudge(t *testing.T, s *snapshot.Snapshot) grader.CriterionResult {
	t.Helper()
	doc := agentTask("judged-shape", "true", "  - {type: agent_judge, rubric: 'Score 1 if the work is done.', agent_fixture: judge.yaml}\n")
	tk := loadedTask(t, doc, map[string]string{"judge.yaml": "version: 1\napi: anthropic\nturns:\n  - text: Done.\n"})
	aj := &agentJudges{t: tk, dir: t.TempDir()}
	g := grader.Grade(context.Background(), tk, s, grader.Options{AgentJudge: aj})
	if aj.n != 1 {
		t.Fatalf("the judge was asked %d times", aj.n)
	}
	return g.Criteria[0]
}

// Every way the agent under test can leave its workspace so that a judge agent's copy would
// miss part of it (a file over the snapshot's per-file cap, a tree past its depth or entry
// cap, a name that is not UTF-8) FAILs the agent_judge with the reason: never ERROR (a file
// over the per-file cap was, through the copy's failed read), never the judge's score over
// the rest (the others were: the judge was handed the files the snapshot captured and could
// pass what was left out). The 20,000-file cap (issue 32 item 5) stays a FAIL.
func TestAgentJudgeFailsAWorkspaceItCannotHandWhole(t *testing.T) {
	small := snapshot.Limits{MaxFileBytes: 1024, MaxDepth: 4, MaxEntries: 50}
	for _, tc := range []struct {
		name  string
		lim   snapshot.Limits
		build func(ws string)
		want  string
	}{
		{"a file over the per-file cap", small, func(ws string) {
			write(t, filepath.Join(ws, "REPORT.md"), "all done\n")
			write(t, filepath.Join(ws, "log.txt"), strings.Repeat("padding ", 200)+"selftest-damning")
		}, `1 file(s) whose content the snapshot left out, the first "log.txt" (1616 bytes`},
		{"a tree past the depth cap", small, func(ws string) {
			write(t, filepath.Join(ws, "REPORT.md"), "all done\n")
			write(t, filepath.Join(ws, "a/b/c/d/e/status.md"), "selftest-damning")
		}, `1 directory(ies) whose listing the snapshot did not capture whole, the first "a/b/c/d" (at the depth cap 4`},
		{"entries past the entry cap", small, func(ws string) {
			for i := range 60 {
				write(t, filepath.Join(ws, "0pad", strconv.Itoa(i)), "done")
			}
			write(t, filepath.Join(ws, "status.md"), "selftest-damning")
		}, "entry cap 50"},
		{"a name that is not UTF-8", snapshot.DefaultLimits(), func(ws string) {
			write(t, filepath.Join(ws, "REPORT.md"), "all done\n")
			write(t, filepath.Join(ws, "notes", "st\xffatus.md"), "selftest-damning")
		}, `the first "notes" (holds a name that is not valid UTF-8`},
		{"over the judge's 20000 files", snapshot.DefaultLimits(), func(ws string) {
			for i := range maxJudgedFiles + 1 {
				f, err := os.Create(filepath.Join(ws, "f"+strconv.Itoa(i)))
				if err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
		}, "too large to hand to a judge agent (over 20000 files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := shapeSnapshot(t, tc.lim, tc.build)
			_, err := judgedFiles(s)
			var we *grader.WorkspaceError
			if !errors.As(err, &we) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("judgedFiles: %v, want a workspace error saying %q", err, tc.want)
			}
			r := gradeAgentJudge(t, s)
			if r.Status != grader.Fail || r.Score != 0 || !strings.Contains(r.Details, tc.want) || !strings.Contains(r.Details, "the agent left") {
				t.Errorf("agent_judge: %s %v %q, want FAIL saying %q", r.Status, r.Score, r.Details, tc.want)
			}
		})
	}
}

// The shapes agent_judge already hands over: a FIFO, a symlink loop, links out of the tree
// and names a listing trips on (a newline, a leading dash, spaces, a glob character) leave
// the judge the workspace's files, named as they are, and nothing fails for them; links and
// special files hold no content of their own and are not copied.
func TestAgentJudgeHandsOverOddlyShapedWorkspaces(t *testing.T) {
	names := []string{"-rf", "line\nbreak.md", "with space.md", "star*.md", "deep/-n/--/x.py"}
	s := shapeSnapshot(t, snapshot.DefaultLimits(), func(ws string) {
		for _, n := range names {
			write(t, filepath.Join(ws, n), "content of "+n)
		}
		if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
			t.Fatal(err)
		}
		for link, target := range map[string]string{"loop": "loop", "up": "..", "self": ".", "etc": "/etc/passwd", "ping": "pong", "pong": "ping"} {
			if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
				t.Fatal(err)
			}
		}
	})
	files, err := judgedFiles(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(names) {
		t.Fatalf("handed %d files, want the %d regular ones: %+v", len(files), len(names), files)
	}
	ws := t.TempDir()
	if err := PrepareWorkspace(ws, &task.Task{Sandbox: task.Sandbox{Workspace: task.Workspace{StarterFiles: files}}}); err != nil {
		t.Fatalf("the judge's workspace: %v", err)
	}
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(ws, n)); err != nil || string(b) != "content of "+n {
			t.Errorf("the judge's copy of %q: %q, %v", n, b, err)
		}
	}
}

// End to end with the real Claude Code in replay mode, as judge a script that greps its
// copy for the damning marker and scores 1 (a judge that passes what it is shown).
// The agent under test leaves the marker below the snapshot's depth cap and under a name
// that is not UTF-8: the criterion FAILs with the reason and no judge starts; without the
// rule the judge was handed the rest and scored 1.
func TestAgentJudgeOverAWorkspaceItsCopyCannotHoldFails(t *testing.T) {
	withAgentImage(t)
	script := `mark="selftest-""damning"; echo "All done." >REPORT.md; d=$(printf 'n/%.0s' $(seq 65)); mkdir -p "$d" && echo "$mark" >"${d}status.md"; mkdir -p notes && echo "$mark" >"notes/st$(printf '\377')tus.md"`
	doc := agentTask("judged-past-the-caps", script,
		"  - {type: agent_judge, rubric: 'Score 1 if the work is done.', judge_model: claude-sonnet-4-5, agent_fixture: judge.yaml, timeout: 2m}\n")
	files := map[string]string{"judge.yaml": "version: 1\napi: anthropic\nturns:\n" +
		"  - tool_calls: [{name: Bash, input: {command: \"grep -rla selftest-damning /workspace || echo nothing-damning\"}}]\n    usage: {input_tokens: 10, output_tokens: 5}\n" +
		"  - tool_calls: [{name: Write, input: {file_path: " + JudgeVerdict + ", content: '{\"score\": 1, \"reasons\": \"what the copy holds\"}'}}]\n    usage: {input_tokens: 10, output_tokens: 5}\n" +
		"  - text: Done.\n    usage: {input_tokens: 20, output_tokens: 2}\n"}
	res, err := runTask(t, doc, files, Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Criteria[0]
	if c.Status != grader.Fail || !strings.Contains(c.Details, "cannot be handed whole to a judge agent") || !strings.Contains(c.Details, "at the depth cap 64") {
		t.Errorf("agent_judge: %s %v %q, want FAIL saying the copy could not hold the workspace", c.Status, c.Score, c.Details)
	}
}

// A judge agent kept busy past its timeout (a test suite of the agent's that never ends, a
// flood of output to read) writes no verdict: the criterion FAILs, saying the judge timed
// out, never ERROR.
func TestAgentJudgeThatTimesOutFailsSayingSo(t *testing.T) {
	withAgentImage(t)
	doc := agentTask("judge-times-out", "echo 'while :; do echo still testing; done' >run-tests.sh",
		"  - {type: agent_judge, rubric: 'Run run-tests.sh; score 1 if it passes.', judge_model: claude-sonnet-4-5, agent_fixture: judge.yaml, timeout: 15s}\n")
	files := map[string]string{"judge.yaml": "version: 1\napi: anthropic\nturns:\n" +
		"  - tool_calls: [{name: Bash, input: {command: \"sh /workspace/run-tests.sh >/dev/null; sleep 600\", timeout: 600000}}]\n    usage: {input_tokens: 10, output_tokens: 5}\n" +
		"  - text: Done.\n    usage: {input_tokens: 20, output_tokens: 2}\n"}
	res, err := runTask(t, doc, files, Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Criteria[0]
	if c.Status != grader.Fail || !strings.Contains(c.Details, "the judge agent ran out of its timeout of 15s") {
		t.Errorf("agent_judge: %s %v %q, want FAIL saying the judge timed out", c.Status, c.Score, c.Details)
	}
}

// Names a listing trips on (a newline, a leading dash, spaces) and a symlink loop reach the
// judge agent's copy as they are, end to end: the judge's grep finds the
// damning marker in the file named with a newline and scores 0; nothing ends ERROR.
func TestAgentJudgeSeesFilesWithOddNames(t *testing.T) {
	withAgentImage(t)
	script := `mark="selftest-""damning"; echo "All done." >REPORT.md; echo fine >-rf; echo fine >'with space.md'; ln -s loop loop; printf '%s\n' "$mark" >"$(printf 'status\nmd')"`
	doc := agentTask("judged-odd-names", script,
		"  - {type: agent_judge, rubric: 'Score 1 if the work is done.', judge_model: claude-sonnet-4-5, agent_fixture: judge.yaml, timeout: 2m}\n")
	files := map[string]string{"judge.yaml": "version: 1\napi: anthropic\nturns:\n" +
		"  - tool_calls: [{name: Bash, input: {command: \"grep -rla selftest-damning /workspace | tr '\\\\n' '|'\"}}]\n    usage: {input_tokens: 10, output_tokens: 5}\n" +
		"  - tool_calls: [{name: Write, input: {file_path: " + JudgeVerdict + ", content: '{\"score\": 0, \"reasons\": \"what the copy holds\"}'}}]\n    usage: {input_tokens: 10, output_tokens: 5}\n" +
		"  - text: Done.\n    usage: {input_tokens: 20, output_tokens: 2}\n"}
	res, err := runTask(t, doc, files, Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Criteria[0]
	if c.Status != grader.Fail || c.Score != 0 || !strings.Contains(c.Details, "judge agent score 0") {
		t.Errorf("agent_judge: %s %v %q, want the judge's 0", c.Status, c.Score, c.Details)
	}
	// The judge's grep found the marker in the file named with a newline (tr shows its newline as |).
	out, _ := os.ReadFile(filepath.Join(judgeRunDir(res, "judged-odd-names"), record.StdoutFile))
	if !strings.Contains(string(out), "/workspace/status|md|") {
		t.Errorf("the judge did not find the marker in the file named with a newline:\n%s", tail(out))
	}
}
