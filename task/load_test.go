package task

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/internal/testtree"
	"ceval.dev/ceval/policy"
)

// writeTask writes files into a fresh directory and returns the path of task.yaml there.
func writeTask(t *testing.T, doc string, files map[string]string) string {
	t.Helper()
	dir := testtree.New(t, files)
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const minimal = `task_id: t1
initial_prompt: do it
success_criteria:
  - {type: file_exists, path: a.txt}
`

func TestLoadMinimalAppliesDefaults(t *testing.T) {
	tk, err := Load(writeTask(t, minimal, nil))
	if err != nil {
		t.Fatal(err)
	}
	if tk.ID != "t1" || tk.Prompt != "do it" || tk.Agent != nil {
		t.Errorf("unexpected task %+v", tk)
	}
	want := Sandbox{Image: DefaultImage, Network: policy.NetworkNone, Limits: Limits{Timeout: 30 * time.Minute, MemoryMB: 2048, CPUs: 2, Pids: 512, DiskMB: 1024}}
	if tk.Sandbox.Image != want.Image || tk.Sandbox.Network != want.Network || tk.Sandbox.Limits != want.Limits {
		t.Errorf("sandbox = %+v, want %+v", tk.Sandbox, want)
	}
	c := tk.Criteria[0]
	if c.Weight != 1 || c.PassThreshold != 0.9 || c.Line != 4 {
		t.Errorf("criterion defaults = %+v", c)
	}
}

func TestLoadExampleHello(t *testing.T) {
	tk, err := Load("../examples/hello/task.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if tk.Agent == nil || tk.Agent.Type != AgentCommand || len(tk.Criteria) != 5 || tk.Reference == nil {
		t.Errorf("hello loaded wrong: %+v", tk)
	}
}

func TestDurationsAcceptGoStringsAndSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{{"90s", 90 * time.Second}, {"30m", 30 * time.Minute}, {"45", 45 * time.Second}, {"1.5", 1500 * time.Millisecond}, {"1h2m", 62 * time.Minute}} {
		doc := strings.Replace(minimal, "success_criteria:", "sandbox: {limits: {timeout: "+tc.in+"}}\nsuccess_criteria:", 1)
		tk, err := Load(writeTask(t, doc, nil))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if tk.Sandbox.Limits.Timeout != tc.want {
			t.Errorf("timeout %s = %v, want %v", tc.in, tk.Sandbox.Limits.Timeout, tc.want)
		}
	}
}

func TestImageWorkdirIsRead(t *testing.T) {
	for _, v := range []string{ImageWorkdirCopy, ImageWorkdirIgnore} {
		doc := strings.Replace(minimal, "success_criteria:", "sandbox: {image_workdir: "+v+"}\nsuccess_criteria:", 1)
		tk, err := Load(writeTask(t, doc, nil))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if tk.Sandbox.ImageWorkdir != v {
			t.Errorf("image_workdir %s read as %q", v, tk.Sandbox.ImageWorkdir)
		}
	}
	tk, err := Load(writeTask(t, minimal, nil))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Sandbox.ImageWorkdir != "" {
		t.Errorf("image_workdir defaults to %q, want \"\" (decided by the image)", tk.Sandbox.ImageWorkdir)
	}
}

func TestPromptFileIsReadRelativeToTask(t *testing.T) {
	doc := "task_id: t\ninitial_prompt_file: prompts/p.md\nsuccess_criteria: [{type: file_exists, path: x}]\n"
	tk, err := Load(writeTask(t, doc, map[string]string{"prompts/p.md": "from file\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Prompt != "from file\n" || tk.PromptFile != "prompts/p.md" {
		t.Errorf("prompt = %q (%q)", tk.Prompt, tk.PromptFile)
	}
}

// Each row is a task document and the problems it must produce, as "LINE:COL: text".
func TestLoadReportsEveryProblemWithItsPosition(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		files map[string]string
		want  []string
	}{
		{"unknown field", "task_id: t\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: x}]\ncolour: red\n",
			nil, []string{`4:1: unknown field "colour" in task`}},
		{"unknown criterion field", "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - type: file_exists\n    path: x\n    pattern: y\n",
			nil, []string{`6:5: unknown field "pattern" in success_criteria[0] (file_exists)`}},
		{"wrong type", "task_id: [a]\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: x}]\n",
			nil, []string{"1:10: task_id must be a scalar, got a list"}},
		{"missing task_id and criteria", "initial_prompt: p\n",
			nil, []string{"1:1: missing required field task_id", "1:1: missing required field success_criteria"}},
		{"both prompts", "task_id: t\ninitial_prompt: p\ninitial_prompt_file: p.md\nsuccess_criteria: [{type: file_exists, path: x}]\n",
			map[string]string{"p.md": "x"}, []string{"3:22: give initial_prompt or initial_prompt_file, not both"}},
		{"no prompt", "task_id: t\nsuccess_criteria: [{type: file_exists, path: x}]\n",
			nil, []string{"1:1: missing required field initial_prompt"}},
		{"prompt file not found", "task_id: t\ninitial_prompt_file: nope.md\nsuccess_criteria: [{type: file_exists, path: x}]\n",
			nil, []string{`2:22: initial_prompt_file: "nope.md" not found next to the task file`}},
		{"regex does not compile", "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - {type: file_matches_regex, path: a, pattern: \"(x\"}\n",
			nil, []string{"4:50: success_criteria[0] (file_matches_regex).pattern: regular expression does not compile"}},
		{"jmespath does not parse", "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - type: json_check\n    path: a.json\n    assertions: [{expression: \"a[\", operator: equals, expected: 1}]\n",
			nil, []string{"6:31: success_criteria[0] (json_check).assertions[0].expression: JMESPath does not parse"}},
		{"bad operator", "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - type: json_check\n    path: a.json\n    assertions: [{expression: a, operator: approx, expected: 1}]\n",
			nil, []string{"6:44: success_criteria[0] (json_check).assertions[0].operator must be one of equals"}},
		{"empty criteria", "task_id: t\ninitial_prompt: p\nsuccess_criteria: []\n",
			nil, []string{"3:19: success_criteria must not be empty"}},
		{"bad task id", "task_id: My_Task\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: x}]\n",
			nil, []string{`1:10: task_id "My_Task" may hold only lowercase letters`}},
		{"bad duration", "task_id: t\ninitial_prompt: p\nsandbox: {limits: {timeout: soon}}\nsuccess_criteria: [{type: file_exists, path: x}]\n",
			nil, []string{`3:29: sandbox.limits.timeout: "soon" is not a duration`}},
		{"limits out of range", "task_id: t\ninitial_prompt: p\nsandbox:\n  limits: {pids: 1, memory_mb: 0, cpus: 0}\nsuccess_criteria: [{type: file_exists, path: x}]\n",
			nil, []string{"4:18: sandbox.limits.pids must be between", "4:32: sandbox.limits.memory_mb must be between", "4:41: sandbox.limits.cpus must be between"}},
		{"bad network", "task_id: t\ninitial_prompt: p\nsandbox: {network: bridge}\nsuccess_criteria: [{type: file_exists, path: x}]\n",
			nil, []string{`3:20: sandbox.network must be one of none, host, got "bridge"`}},
		{"bad image_workdir", "task_id: t\ninitial_prompt: p\nsandbox: {image_workdir: merge}\nsuccess_criteria: [{type: file_exists, path: x}]\n",
			nil, []string{`3:26: sandbox.image_workdir must be one of copy, ignore, got "merge"`}},
		{"agent command missing", "task_id: t\ninitial_prompt: p\nagent: {type: command}\nsuccess_criteria: [{type: file_exists, path: x}]\n",
			nil, []string{"3:8: agent.command is required for agent type command"}},
		{"command on claude-code", "task_id: t\ninitial_prompt: p\nagent: {type: claude-code, command: [x]}\nsuccess_criteria: [{type: file_exists, path: x}]\n",
			nil, []string{"3:37: agent.command is only for agent type command"}},
		{"bad env name", "task_id: t\ninitial_prompt: p\nagent: {type: codex, env_passthrough: [\"A-B\"]}\nsuccess_criteria: [{type: file_exists, path: x}]\n",
			nil, []string{`3:40: agent.env_passthrough[0]: "A-B" is not an environment variable name`}},
		{"missing criterion type", "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - {path: x}\n",
			nil, []string{"4:5: success_criteria[0]: missing required field type"}},
		{"missing path", "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - {type: file_contains, includes: [a]}\n",
			nil, []string{"4:5: success_criteria[0] (file_contains): missing required field path"}},
		{"protected mock without fixture", "task_id: t\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: x}]\nprotected_mocks: [{tool: gh}]\n",
			nil, []string{"4:19: protected_mocks[0]: missing required field fixture"}},
		{"duplicate key", "task_id: t\ntask_id: u\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: x}]\n",
			nil, []string{`2:1: duplicate field "task_id" in task`}},
		{"not yaml", "task_id: [\n", nil, []string{"not valid YAML"}},
		{"classification label not allowed", "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - {type: classification_match, path: l, expected_label: x, allowed_labels: [a, b]}\n",
			nil, []string{`4:5: success_criteria[0] (classification_match): expected_label "x" is not among allowed_labels`}},
		{"run_command both modes", "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - {type: run_command, command: ls, expected_stdout: x, score_from_stdout: true}\n",
			nil, []string{"4:77: success_criteria[0] (run_command): give expected_stdout or score_from_stdout, not both"}},
		{"harbor_reward in WASM", "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - {type: run_command, command: ls, harbor_reward: true}\n",
			nil, []string{"4:53: success_criteria[0] (run_command).harbor_reward runs tests/test.sh in a verifier container: add sandbox: container"}},
		{"harbor_reward with stdout scoring", "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - {type: run_command, command: ls, sandbox: container, harbor_reward: true, score_from_stdout: true}\n",
			nil, []string{"4:98: success_criteria[0] (run_command): harbor_reward scores the reward tests/test.sh writes, not its stdout: remove score_from_stdout"}},
		{"wasm sha256", "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - {type: wasm, module: c.wasm, sha256: XYZ}\n",
			map[string]string{"c.wasm": "\x00asm"}, []string{"4:42: success_criteria[0] (wasm).sha256 must be 64 lowercase hex digits"}},
		{"schema refers outside", "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - type: json_check\n    path: a.json\n    json_schema: {$ref: \"file:///etc/passwd\"}\n",
			nil, []string{"6:18: success_criteria[0] (json_check).json_schema: schema does not compile"}},
		{"two documents", minimal + "---\ntask_id: u\n", nil, []string{"5:1: more than one YAML document"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTask(t, tc.doc, tc.files)
			_, err := Load(p)
			ps, ok := err.(Problems)
			if !ok {
				t.Fatalf("want Problems, got %v", err)
			}
			got := ps.Error()
			for _, w := range tc.want {
				if !strings.Contains(got, p+":"+w) && !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
				if strings.Contains(w, ":") && w[0] >= '0' && w[0] <= '9' && !strings.Contains(got, p+":"+w) {
					t.Errorf("problem %q not reported at its position in:\n%s", w, got)
				}
			}
			if len(ps) < len(tc.want) {
				t.Errorf("got %d problems, want at least %d:\n%s", len(ps), len(tc.want), got)
			}
		})
	}
}

// Task files come from third parties: every path they name must stay in their directory.
func TestTaskPathsCannotLeaveTaskDirectory(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.md"), []byte("canary"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, field, value, want string
	}{
		{"absolute prompt file", "initial_prompt_file", "/etc/passwd", "is absolute"},
		{"dotdot prompt file", "initial_prompt_file", "../secret.md", "leaves the task file's directory"},
		{"symlink prompt file", "initial_prompt_file", "link.md", "symlink that leaves"},
		{"absolute reference", "reference", "{directory: /etc}", "is absolute"},
		{"symlinked reference dir", "reference", "{directory: linkdir}", "symlink that leaves"},
		{"dotdot template", "sandbox", "{workspace: {template_dir: sub/../../x}}", "leaves the task file's directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := "task_id: t\n" + tc.field + ": " + tc.value + "\nsuccess_criteria: [{type: file_exists, path: x}]\n"
			if tc.field != "initial_prompt_file" {
				doc = "initial_prompt: p\n" + doc
			}
			p := writeTask(t, doc, nil)
			dir := filepath.Dir(p)
			_ = os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(dir, "link.md"))
			_ = os.Symlink(outside, filepath.Join(dir, "linkdir"))
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
			if strings.Contains(err.Error(), "canary") {
				t.Fatal("error leaks the outside file's content")
			}
		})
	}
}

func TestWorkspacePathsCannotLeaveWorkspace(t *testing.T) {
	for _, p := range []string{"/etc/passwd", "../x", "a/../../x", "..", ".", `a\..\b`} {
		doc := "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - {type: file_contains, path: '" + p + "', includes: [x]}\n"
		if _, err := Load(writeTask(t, doc, nil)); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
	doc := "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - {type: file_contains, path: './a/../b.txt', includes: [x]}\n"
	tk, err := Load(writeTask(t, doc, nil))
	if err != nil || tk.Criteria[0].Spec.(*FileContainsSpec).Path != "b.txt" {
		t.Fatalf("clean inside path: %v %+v", err, tk)
	}
}

func TestAliasBombIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("task_id: t\ninitial_prompt: p\nx0: &a0 [1,1,1,1,1,1,1,1,1,1]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("x" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	b.WriteString("success_criteria:\n  - type: json_check\n    path: a.json\n    assertions: [{expression: a, operator: equals, expected: *a8}]\n")
	start := time.Now()
	_, err := Parse("bomb.yaml", t.TempDir(), []byte(b.String()))
	if err == nil {
		t.Fatal("alias bomb accepted")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("alias bomb took %v", time.Since(start))
	}
}

func TestOversizedTaskFileIsRefused(t *testing.T) {
	p := writeTask(t, minimal+"# "+strings.Repeat("x", MaxTaskFileBytes)+"\n", nil)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("got %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	if data, err := os.ReadFile("../examples/hello/task.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("task_id: [\n"))
	f.Add([]byte("a: &a [*a]\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		// A hostile task file must not stall validation: crash the worker so the fuzzer
		// records the input.
		watchdog := time.AfterFunc(5*time.Second, func() { panic(fmt.Sprintf("Parse stalled on %q", data)) })
		tk, err := Parse("fuzz.yaml", dir, data)
		watchdog.Stop()
		if err == nil && (tk.ID == "" || len(tk.Criteria) == 0) {
			t.Fatalf("valid task without id or criteria: %+v", tk)
		}
		if ps, ok := err.(Problems); ok && len(ps) == 0 {
			t.Fatal("empty Problems returned as an error")
		}
	})
}

func TestDigestCoversReferencedFiles(t *testing.T) {
	doc := "task_id: t\ninitial_prompt_file: p.md\nreference: {directory: ref}\nsuccess_criteria: [{type: file_exists, path: x}]\n"
	p := writeTask(t, doc, map[string]string{"p.md": "prompt", "ref/answer.txt": "42"})
	tk, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	d1, err := Digest(tk)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(p), "ref/answer.txt"), []byte("43"), 0o644); err != nil {
		t.Fatal(err)
	}
	d2, _ := Digest(tk)
	if d1 == d2 || len(d1) != 64 {
		t.Errorf("digest did not change with the reference: %s %s", d1, d2)
	}
	os.WriteFile(filepath.Join(filepath.Dir(p), "unrelated.txt"), []byte("x"), 0o644)
	if d3, _ := Digest(tk); d3 != d2 {
		t.Error("digest changed with an unreferenced file")
	}
}

// TestAReadingCriterionPathMayBeAGlob: file_contains, json_check... take a glob path (coder_eval's
// paths may be globs; the grader needs it to match one file); a starter file's path may not.
func TestAReadingCriterionPathMayBeAGlob(t *testing.T) {
	ok := "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - {type: file_contains, path: \"src/*.py\", includes: [x]}\n  - {type: json_check, path: \"**/r.json\", assertions: [{expression: a, operator: exists}]}\n"
	tk, err := Parse("t.yaml", t.TempDir(), []byte(ok))
	if err != nil || tk.Criteria[0].Spec.(*FileContainsSpec).Path != "src/*.py" || tk.Criteria[1].Spec.(*JSONCheckSpec).Path != "**/r.json" {
		t.Fatalf("%v %+v", err, tk)
	}
	bad := "task_id: t\ninitial_prompt: p\nsandbox:\n  workspace:\n    starter_files: [{path: \"a*.txt\", content: x}]\nsuccess_criteria:\n  - {type: file_exists, path: a}\n"
	if _, err := Parse("t.yaml", t.TempDir(), []byte(bad)); err == nil || !strings.Contains(err.Error(), "glob characters") {
		t.Fatalf("a starter file with a glob: %v", err)
	}
}
