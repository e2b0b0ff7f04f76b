package task

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// hostileMaterial writes, below dir, the material of a task whose every file and directory
// says word.
func hostileMaterial(t *testing.T, dir, word string) {
	t.Helper()
	for name, content := range map[string]string{
		"ref/answer.txt":          "answer-" + word,
		"tpl/readme.txt":          "template-" + word,
		"kit/skills/fix/SKILL.md": "skill-" + word,
		"check.wasm":              "\x00asm-" + word,
		"calls.jsonl":             `{"api":"anthropic","depth":0,"tools":true,"status":200,"content_type":"application/json","response":"{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"` + word + `\"}],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}"}` + "\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The task author swaps every piece of material for a symlink to a host directory once the
// task is validated: what ceval holds (and so serves, grades and digests) is still the
// validated material, read through the handles opened at load.
func TestMaterialSwappedForSymlinkAfterLoadIsNotWhatIsRead(t *testing.T) {
	dir, host := t.TempDir(), t.TempDir()
	hostileMaterial(t, dir, "validated")
	hostileMaterial(t, host, "HOST-CANARY")
	doc := "task_id: t\ninitial_prompt: p\nreference: {directory: ref}\nplugins: [{path: kit}]\n" +
		"sandbox: {workspace: {template_dir: tpl}}\n" +
		"agent: {type: command, command: [x], model: m, gateway: {mode: replay, fixture: calls.jsonl}}\n" +
		"success_criteria: [{type: wasm, module: check.wasm, sha256: \"" + strings.Repeat("0", 64) + "\"}]\n"
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	before, err := Digest(tk)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ref", "tpl", "kit", "check.wasm", "calls.jsonl", "task.yaml"} {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, name+".validated")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(host, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	read := func(d *Dir, name string) string {
		t.Helper()
		data, err := d.Root().ReadFile(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return string(data)
	}
	for _, got := range []string{read(tk.Reference, "answer.txt"), read(tk.Sandbox.Workspace.TemplateDir, "readme.txt"),
		read(tk.Plugins[0].Dir, "skills/fix/SKILL.md")} {
		if !strings.HasSuffix(got, "-validated") {
			t.Errorf("read %q through a handle, want the validated material", got)
		}
	}
	if data, err := tk.Criteria[0].Spec.(*WASMSpec).Module.ReadAll(1 << 20); err != nil || string(data) != "\x00asm-validated" {
		t.Errorf("module read %q (%v), want the validated one", data, err)
	}
	if c := tk.Agent.Gateway.Fixture.Calls; len(c) != 1 || !strings.Contains(c[0].Response, "validated") {
		t.Errorf("replay fixture %+v, want the validated one", c)
	}
	if after, err := Digest(tk); err != nil || after != before {
		t.Errorf("digest after the swap %s (%v), want %s: it must name what was validated", after, err, before)
	}
}

// A FIFO planted where a task names a directory (reference, plugin, template) fails as not a
// directory; opening it for the handle would block until a writer came.
func TestFIFOAsTaskDirectoryIsRefusedWithoutBlocking(t *testing.T) {
	for _, field := range []string{"reference: {directory: m}", "plugins: [{path: m}]", "sandbox: {workspace: {template_dir: m}}"} {
		dir := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(dir, "m"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "task.yaml")
		os.WriteFile(p, []byte("task_id: t\ninitial_prompt: p\n"+field+"\nsuccess_criteria: [{type: file_exists, path: x}]\n"), 0o644)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), `"m" is not a directory`) {
			t.Errorf("FIFO as %q: %v", field, err)
		}
	}
}

// A FIFO planted as a task file (prompt, fixture) must not hang the loader (it would, opened
// for reading), and a device must not be read: only regular files are opened, without
// blocking.
func TestFIFOAndDeviceAsTaskFilesAreRefusedWithoutBlocking(t *testing.T) {
	for _, field := range []string{"initial_prompt_file: m", "agent: {type: command, command: [x], gateway: {mode: replay, fixture: m}}\ninitial_prompt: p",
		"protected_mocks: [{tool: gh, fixture: m}]\ninitial_prompt: p"} {
		for _, kind := range []string{"fifo", "device"} {
			dir := t.TempDir()
			m := filepath.Join(dir, "m")
			if kind == "fifo" {
				if err := syscall.Mkfifo(m, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if err := syscall.Mknod(m, syscall.S_IFCHR|0o644, int(unix.Mkdev(1, 5))); err != nil {
				t.Skipf("mknod /dev/zero's twin: %v", err)
			}
			p := filepath.Join(dir, "task.yaml")
			os.WriteFile(p, []byte("task_id: t\n"+field+"\nsuccess_criteria: [{type: file_exists, path: x}]\n"), 0o644)
			if _, err := Load(p); err == nil {
				t.Errorf("%s as %q: loaded", kind, field)
			} else if !strings.Contains(err.Error(), "is not a regular file") {
				t.Errorf("%s as %q: %v", kind, field, err)
			}
		}
	}
}
