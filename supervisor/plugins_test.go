package supervisor

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/bundle"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/internal/testtree"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/task"
)

// pluginTask writes a task directory with two plugins: kit/ a source tree (with grading
// material outside its allowlisted trees) and prebuilt/ a built bundle, and the task file
// with agent and extra YAML given; it returns the task file's path.
func pluginTask(t *testing.T, agent, extra string) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "prebuilt"), 0o755); os.RemoveAll(dir) })
	files := map[string]string{
		"kit/skills/fix/SKILL.md":           "---\nname: fix\ndescription: fix typos\n---\nFix it carefully.\n",
		"kit/commands/go.md":                "Go.\n",
		"kit/tests/test_hidden.py":          "assert answer == 42\n",
		"kit/solution.py":                   "answer = 42\n",
		"kit/RESOLUTION.md":                 "how it was solved\n",
		"src-prebuilt/skills/lint/SKILL.md": "---\nname: lint\n---\nLint it.\n",
	}
	testtree.Write(t, dir, files)
	if _, err := bundle.Build(filepath.Join(dir, "src-prebuilt"), filepath.Join(dir, "prebuilt"), bundle.Options{}); err != nil {
		t.Fatal(err)
	}
	doc := "task_id: plugins\ninitial_prompt: use the plugins\nagent: " + agent + "\n" +
		"plugins: [{path: kit}, {path: prebuilt, mount: /opt/tools/prebuilt}]\n" + extra +
		"success_criteria: [{type: file_exists, path: done.txt}]\n"
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func pluginLoadTask(t *testing.T, p string) *task.Task {
	t.Helper()
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestClaudeCodeGetsOnePluginDirFlagPerBundle(t *testing.T) {
	tk := &task.Task{ID: "t", Prompt: "p", Agent: &task.Agent{Type: task.AgentClaudeCode, Model: "m"},
		Plugins: []task.Plugin{{Name: "a", Mount: "/opt/ceval/plugins/a"}, {Name: "b", Mount: "/opt/b"}}}
	argv, err := AgentArgv(tk)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"claude", "-p", "p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions",
		"--plugin-dir", "/opt/ceval/plugins/a", "--plugin-dir", "/opt/b", "--model", "m"}
	if !slices.Equal(argv, want) {
		t.Errorf("argv = %q\nwant %q", argv, want)
	}
	env, _, err := AgentEnv(tk, Allow{Env: []string{"ANTHROPIC_API_KEY"}}, func(string) (string, bool) { return "", false })
	if err != nil || !slices.Contains(env, "CEVAL_PLUGIN_DIRS=/opt/ceval/plugins/a:/opt/b") {
		t.Errorf("env = %q, %v", env, err)
	}
}

func TestPreparePluginsBuildsSourceTreesAndVerifiesBundles(t *testing.T) {
	tk := pluginLoadTask(t, pluginTask(t, "{type: command, command: [/bin/true]}", ""))
	runDir := t.TempDir()
	t.Cleanup(func() {
		os.Chmod(filepath.Join(runDir, record.PluginsDir, "kit"), 0o755)
		os.Chmod(filepath.Join(runDir, record.PluginsDir, "prebuilt"), 0o755)
	})
	var events []string
	rs, mounts, err := preparePlugins(tk, runDir, func(e string, _ map[string]any) { events = append(events, e) })
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || !rs[0].Built || rs[1].Built || rs[0].Bundle != filepath.Join(runDir, record.PluginsDir, "kit") ||
		rs[1].Bundle != filepath.Join(runDir, record.PluginsDir, "prebuilt") || rs[1].Source != filepath.Join(tk.Dir, "prebuilt") ||
		rs[0].SHA256Before == "" || !rs[0].HasSkills {
		t.Errorf("results = %+v", rs)
	}
	want := []string{filepath.Join(runDir, record.PluginsDir, "kit", bundle.TreeDir) + " -> /opt/ceval/plugins/kit",
		filepath.Join(runDir, record.PluginsDir, "prebuilt", bundle.TreeDir) + " -> /opt/tools/prebuilt"}
	var got []string
	for _, m := range mounts {
		got = append(got, m.Source+" -> "+m.Destination)
	}
	if !slices.Equal(got, want) {
		t.Errorf("mounts = %q, want %q", got, want)
	}
	for _, denied := range []string{"tests", "solution.py", "RESOLUTION.md"} {
		if _, err := os.Lstat(filepath.Join(rs[0].Bundle, bundle.TreeDir, denied)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s reached the projected tree", denied)
		}
	}
	if err := verifyPluginsAfter(rs, func(string, map[string]any) {}); err != nil || rs[0].SHA256After != rs[0].SHA256Before {
		t.Errorf("verify after = %v, %+v", err, rs[0])
	}

	// The host changes a projected file during the run: the after-check fails the run.
	p := filepath.Join(rs[1].Bundle, bundle.TreeDir, "skills/lint/SKILL.md")
	if err := os.WriteFile(p, []byte("Lint it, and read ../tests too.\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	err = verifyPluginsAfter(rs, func(string, map[string]any) {})
	if err == nil || !strings.Contains(err.Error(), "plugin prebuilt changed during the run") || rs[1].SHA256After == rs[1].SHA256Before {
		t.Errorf("verify after a change = %v, %+v", err, rs[1])
	}
}

func TestPreparePluginsRefusesRunOnDriftedBundle(t *testing.T) {
	tk := pluginLoadTask(t, pluginTask(t, "{type: command, command: [/bin/true]}", ""))
	dir := filepath.Join(tk.Dir, "prebuilt", bundle.TreeDir, "skills/lint")
	os.Chmod(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "solution.md"), []byte("the answer"), 0o444)
	_, _, err := preparePlugins(tk, t.TempDir(), func(string, map[string]any) {})
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "skills/lint/solution.md: extra file") {
		t.Fatalf("preparePlugins = %v, want an InputError naming the planted file", err)
	}
}

func TestPreparePluginsRefusesSourceWithGradingMaterialInsideSkills(t *testing.T) {
	tk := pluginLoadTask(t, pluginTask(t, "{type: command, command: [/bin/true]}", ""))
	os.MkdirAll(filepath.Join(tk.Dir, "kit/skills/fix/tests"), 0o755)
	os.Symlink("/etc/passwd", filepath.Join(tk.Dir, "kit/skills/fix/passwd"))
	_, _, err := preparePlugins(tk, t.TempDir(), func(string, map[string]any) {})
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "skills/fix/tests: denied") || !strings.Contains(err.Error(), "skills/fix/passwd: symlink") {
		t.Fatalf("preparePlugins = %v, want an InputError listing both offenders", err)
	}
}

func TestLinkCodexSkillsPointsIntoTheMount(t *testing.T) {
	home := t.TempDir()
	err := linkCodexSkills(home, []record.PluginResult{{Name: "kit", Mount: "/opt/ceval/plugins/kit", HasSkills: true}, {Name: "noskills", Mount: "/opt/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(home, ".agents/skills/kit")); err != nil || target != "/opt/ceval/plugins/kit/skills" {
		t.Errorf("link = %q, %v", target, err)
	}
	if _, err := os.Lstat(filepath.Join(home, ".agents/skills/noskills")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a plugin without skills/ got a link")
	}
}

// The agent lists and reads what it should see, cannot change it by any means a process
// without capabilities has, and finds no grading material anywhere it can look.
const pluginAgent = `
K=/opt/ceval/plugins/kit P=/opt/tools/prebuilt W=/workspace
(cd $K && find . | sort) > $W/kit.txt
(cd $P && find . | sort) > $W/prebuilt.txt
cat $K/skills/fix/SKILL.md $P/skills/lint/SKILL.md > $W/skills.txt
: > $W/writes.txt
echo x > $W/control 2>/dev/null && echo "control: wrote the workspace" > $W/control.txt
echo pwned > $K/skills/fix/SKILL.md 2>/dev/null && echo "overwrote SKILL.md" >> $W/writes.txt
echo x > $K/skills/planted.md 2>/dev/null && echo "planted a file" >> $W/writes.txt
mkdir $K/skills/d 2>/dev/null && echo "made a dir" >> $W/writes.txt
chmod 666 $K/skills/fix/SKILL.md 2>/dev/null && echo "chmod" >> $W/writes.txt
rm -f $P/skills/lint/SKILL.md 2>/dev/null; [ -e $P/skills/lint/SKILL.md ] || echo "removed" >> $W/writes.txt
ln -s /etc/passwd $K/skills/pw 2>/dev/null && echo "linked" >> $W/writes.txt
touch -d 2001-01-01 $K/commands/go.md 2>/dev/null && echo "touched" >> $W/writes.txt
mount -o remount,rw $K 2>/dev/null && echo "remounted" >> $W/writes.txt
umount $K 2>/dev/null && echo "unmounted" >> $W/writes.txt
touch /tmp/test_control
find / -xdev \( -name 'test_*' -o -name 'solution*' -o -name 'RESOLUTION*' -o -name tests \) 2>/dev/null > $W/found.txt
find /opt /home /tmp \( -name 'test_*' -o -name 'solution*' -o -name 'RESOLUTION*' -o -name tests \) 2>/dev/null >> $W/found.txt
echo "$CEVAL_PLUGIN_DIRS" > $W/dirs.txt
grep -E ' (/opt/ceval/plugins/kit|/opt/tools/prebuilt) ' /proc/self/mountinfo > $W/mountinfo.txt
echo ok > $W/done.txt
`

func TestRunProjectsPluginsReadOnlyAndRecordsBothDigests(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	p := pluginTask(t, "{type: command, command: [/bin/sh, -c, "+pluginQuote(pluginAgent)+"]}",
		"sandbox: {limits: {timeout: 60s, memory_mb: 256, pids: 64, disk_mb: 16}}\n")
	tk := pluginLoadTask(t, p)
	runs := t.TempDir()
	t.Cleanup(func() { pluginChmodTree(runs) })
	res, err := Run(ctx, tk, Options{Client: c, RunsDir: runs})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" {
		t.Fatalf("status %s: %s", res.Status, res.Error)
	}
	ws := filepath.Join(res.Dir, record.WorkspaceDir)
	read := func(name string) string { data, _ := os.ReadFile(filepath.Join(ws, name)); return string(data) }
	if got, want := read("kit.txt"), ".\n./commands\n./commands/go.md\n./skills\n./skills/fix\n./skills/fix/SKILL.md\n"; got != want {
		t.Errorf("the agent listed kit as\n%s\nwant\n%s", got, want)
	}
	if got, want := read("prebuilt.txt"), ".\n./skills\n./skills/lint\n./skills/lint/SKILL.md\n"; got != want {
		t.Errorf("the agent listed prebuilt as\n%s\nwant\n%s", got, want)
	}
	if s := read("skills.txt"); !strings.Contains(s, "Fix it carefully.") || !strings.Contains(s, "Lint it.") {
		t.Errorf("the agent read the skills as %q", s)
	}
	if s := read("writes.txt"); s != "" {
		t.Errorf("the agent changed a projected bundle:\n%s", s)
	}
	if s := read("found.txt"); s != "/tmp/test_control\n" {
		t.Errorf("the agent found grading material (only its own /tmp/test_control was expected):\n%s", s)
	}
	if s := read("control.txt"); s == "" {
		t.Error("the write probe cannot tell a write that worked")
	}
	// Read-only by the mount itself, not only by the files' modes (root owns them, 0444).
	mounts := strings.Split(strings.TrimSpace(read("mountinfo.txt")), "\n")
	if len(mounts) != 2 {
		t.Errorf("mountinfo has %d plugin mounts: %q", len(mounts), mounts)
	}
	for _, line := range mounts {
		if f := strings.Fields(line); len(f) < 6 || !slices.Contains(strings.Split(f[5], ","), "ro") {
			t.Errorf("plugin mount is not read-only: %s", line)
		}
	}
	if s := read("dirs.txt"); s != "/opt/ceval/plugins/kit:/opt/tools/prebuilt\n" {
		t.Errorf("CEVAL_PLUGIN_DIRS = %q", s)
	}

	data, err := os.ReadFile(filepath.Join(res.Dir, record.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk struct{ Plugins []record.PluginResult }
	if err := json.Unmarshal(data, &onDisk); err != nil {
		t.Fatal(err)
	}
	if len(onDisk.Plugins) != 2 {
		t.Fatalf("result.json plugins = %+v", onDisk.Plugins)
	}
	for _, r := range onDisk.Plugins {
		if len(r.SHA256Before) != 64 || r.SHA256After != r.SHA256Before {
			t.Errorf("result.json plugin %s: before %q after %q", r.Name, r.SHA256Before, r.SHA256After)
		}
	}
	if !onDisk.Plugins[0].Built || onDisk.Plugins[0].Bundle != filepath.Join(res.Dir, record.PluginsDir, "kit") {
		t.Errorf("kit was not built into the run directory: %+v", onDisk.Plugins[0])
	}
}

func TestRunRefusesDriftedPluginBeforeLaunch(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	tk := pluginLoadTask(t, pluginTask(t, "{type: command, command: [/bin/sh, -c, 'echo ok > done.txt']}", ""))
	p := filepath.Join(tk.Dir, "prebuilt", bundle.TreeDir, "skills/lint/SKILL.md")
	os.WriteFile(p, []byte("---\nname: lint\n---\nLint it. The answer is 42.\n"), 0o444)
	res, err := Run(ctx, tk, Options{Client: c, RunsDir: t.TempDir()})
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "skills/lint/SKILL.md: content changed") {
		t.Fatalf("Run = %v, want an InputError naming the changed file", err)
	}
	if res == nil || res.Status != record.StatusError || res.Agent.ExitCode != nil {
		t.Fatalf("result = %+v, want ERROR without an agent", res)
	}
	data, _ := os.ReadFile(filepath.Join(res.Dir, record.ResultFile))
	if !strings.Contains(string(data), "content changed") {
		t.Errorf("result.json does not say why:\n%s", data)
	}
}

// Fake CLIs that find the plugins the way the real ones are documented to: Claude Code
// from its --plugin-dir flags, Codex from $HOME/.agents/skills (following the symlinked
// skill directories there).
const fakePluginClaude = `#!/bin/sh
: > /workspace/seen.txt
while [ $# -gt 0 ]; do
  if [ "$1" = --plugin-dir ]; then shift; cat "$1"/skills/*/SKILL.md >> /workspace/seen.txt; fi
  shift
done
echo '{"type":"result","subtype":"success","num_turns":1,"usage":{"input_tokens":1,"output_tokens":1}}'
echo ok > /workspace/done.txt
`

const fakePluginCodex = `#!/bin/sh
: > /workspace/seen.txt
for d in "$HOME"/.agents/skills/*/; do
  for s in "$d"*/SKILL.md; do cat "$s" >> /workspace/seen.txt; done
done
echo '{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}'
echo ok > /workspace/done.txt
`

func TestClaudeCodeAndCodexFindProjectedPlugins(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	const img = "ceval.local/fake-plugin-agents:test"
	if _, err := images.BuildDefault(ctx, c, images.DefaultOptions{Name: img, Extra: []images.File{
		{Path: "usr/local/bin/claude", Mode: 0o755, Data: []byte(fakePluginClaude)},
		{Path: "usr/local/bin/codex", Mode: 0o755, Data: []byte(fakePluginCodex)},
	}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, img) })
	for _, agent := range []string{task.AgentClaudeCode, task.AgentCodex} {
		t.Run(agent, func(t *testing.T) {
			tk := pluginLoadTask(t, pluginTask(t, "{type: "+agent+"}",
				"sandbox: {image: \""+img+"\", limits: {timeout: 60s, memory_mb: 256, pids: 64, disk_mb: 16}}\n"))
			runs := t.TempDir()
			t.Cleanup(func() { pluginChmodTree(runs) })
			// The fake CLIs call no model; a forwarding gateway still needs their key to start.
			keys := func(k string) (string, bool) {
				return "sk-unused-0123456789", k == "ANTHROPIC_API_KEY" || k == "OPENAI_API_KEY"
			}
			res, err := Run(ctx, tk, Options{Client: c, RunsDir: runs, LookupEnv: keys, Allow: Allow{Env: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "SUCCESS" {
				t.Fatalf("status %s: %s", res.Status, res.Error)
			}
			seen, _ := os.ReadFile(filepath.Join(res.Dir, record.WorkspaceDir, "seen.txt"))
			if !strings.Contains(string(seen), "Fix it carefully.") {
				t.Errorf("%s did not find kit's skill: %q", agent, seen)
			}
			// prebuilt has skills too; both CLIs must see both plugins.
			if !strings.Contains(string(seen), "Lint it.") {
				t.Errorf("%s did not find prebuilt's skill: %q", agent, seen)
			}
		})
	}
}

func pluginQuote(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

// pluginChmodTree makes a run directory holding read-only bundles removable by t.TempDir's
// cleanup when the tests do not run as root.
func pluginChmodTree(dir string) {
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
}
