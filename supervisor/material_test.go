package supervisor

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/bundle"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/internal/testtree"
	"ceval.dev/ceval/task"
	"ceval.dev/ceval/wasm"
)

// materialTree is the task material a swap test needs, each piece saying word: a reference,
// a template, a replay fixture, a plugin source tree (kit) and a built bundle (prebuilt).
func materialTree(t *testing.T, dir, word string) {
	t.Helper()
	answer := `{"type":"message","content":[{"type":"text","text":"replay-` + word + `"}],"usage":{"input_tokens":1,"output_tokens":1}}`
	testtree.Write(t, dir, map[string]string{
		"ref/answer.txt":            "answer-" + word + "\n",
		"tpl/readme.txt":            "template-" + word + "\n",
		"calls.jsonl":               `{"api":"anthropic","depth":0,"tools":true,"status":200,"content_type":"application/json","response":` + quote(answer) + "}\n",
		"kit/skills/fix/SKILL.md":   "skill-" + word + "\n",
		"src/skills/lint/SKILL.md":  "lint-" + word + "\n",
		"kit/commands/unrelated.md": "x\n",
	})
	if _, err := bundle.Build(filepath.Join(dir, "src"), filepath.Join(dir, "prebuilt"), bundle.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pluginChmodTree(filepath.Join(dir, "prebuilt")) })
}

// The task author races ceval: once the task is validated, each piece of its material is
// swapped, just before ceval uses it, for a symlink to a host directory holding a canary. ceval must serve and grade
// the material it validated (the handles it opened at load), and the canary must reach
// nothing of the run's: not the agent, not the transcript, not result.json.
func TestTaskMaterialSwappedForSymlinkToHostMidRunIsNeverServed(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	cn := canary(t)
	dir, host := t.TempDir(), t.TempDir()
	materialTree(t, dir, "validated")
	materialTree(t, host, cn)
	script := `printf '%s' '{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"Bash","input_schema":{}}]}' > /tmp/req.json
wget -q -O /workspace/out.txt --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file /tmp/req.json "$CEVAL_GATEWAY_URL/v1/messages"
cat /opt/ceval/plugins/kit/skills/fix/SKILL.md /opt/tools/prebuilt/skills/lint/SKILL.md > /workspace/plugins.txt
true`
	criteria := "  - {type: run_command, command: cat /reference/answer.txt, uses_reference: true, expected_stdout: answer-validated, stdout_match: contains}\n" +
		"  - {type: file_contains, path: readme.txt, includes: [template-validated]}\n" +
		"  - {type: file_contains, path: out.txt, includes: [replay-validated]}\n" +
		"  - {type: file_contains, path: plugins.txt, includes: [skill-validated, lint-validated]}\n"
	doc := agentTask("swap", script, criteria, "reference: {directory: ref}\n",
		"plugins: [{path: kit}, {path: prebuilt, mount: /opt/tools/prebuilt}]\n")
	doc = strings.Replace(doc, "  type: command\n", "  type: command\n  model: m\n  gateway: {mode: replay, fixture: calls.jsonl}\n", 1)
	doc = strings.Replace(doc, "sandbox:\n", "sandbox:\n  workspace: {template_dir: tpl}\n", 1)
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	ex, err := wasm.NewExecutor(wasm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	// Each piece is swapped at the last event before ceval uses it (and after task.Digest).
	at := map[string][]string{"run_started": {"kit", "prebuilt"}, "plugin_verified": {"calls.jsonl"},
		"image_ready": {"tpl"}, "agent_exited": {"ref"}}
	swapped := map[string]bool{}
	swap := func(event string, _ map[string]any) {
		for _, name := range at[event] {
			if swapped[name] {
				continue
			}
			swapped[name] = true
			if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, name+".validated")); err != nil {
				t.Error(err)
			}
			if err := os.Symlink(filepath.Join(host, name), filepath.Join(dir, name)); err != nil {
				t.Error(err)
			}
		}
	}
	res, err := runLoaded(t, ctx, c, tk, Options{Executor: ex, Progress: swap, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if len(swapped) != 5 {
		t.Fatalf("swapped only %v", swapped)
	}
	if res.Status != "SUCCESS" {
		for _, cr := range res.Criteria {
			t.Logf("%s: %s %s", cr.Type, cr.Status, cr.Details)
		}
		t.Errorf("status %s: grading or serving did not use the validated material", res.Status)
	}
	err = filepath.WalkDir(res.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if data, _ := os.ReadFile(p); strings.Contains(string(data), cn) {
			t.Errorf("BREACH: the canary of the swapped-in host directory is in %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
