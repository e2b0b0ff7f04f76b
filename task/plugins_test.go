package task

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPluginsGetDefaultMountsAndStayInTheTaskDirectory(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{"plugins/fmt", "plugins/lint", "plugins/bad name"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "plugins/file"), []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(dir, "escape"))
	head := "task_id: t\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: x}]\n"
	load := func(t *testing.T, plugins string) (*Task, error) {
		t.Helper()
		p := filepath.Join(dir, "task.yaml")
		if err := os.WriteFile(p, []byte(head+"plugins: "+plugins+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return Load(p)
	}

	tk, err := load(t, "[{path: plugins/fmt}, {path: plugins/lint, mount: /opt/tools/lint}]")
	if err != nil {
		t.Fatal(err)
	}
	type plugin struct{ Path, Name, Mount string }
	want := []plugin{
		{filepath.Join(dir, "plugins/fmt"), "fmt", "/opt/ceval/plugins/fmt"},
		{filepath.Join(dir, "plugins/lint"), "lint", "/opt/tools/lint"},
	}
	var got []plugin
	for _, p := range tk.Plugins {
		got = append(got, plugin{p.Dir.Path, p.Name, p.Mount})
	}
	if !slices.Equal(got, want) {
		t.Errorf("plugins = %+v, want %+v", got, want)
	}

	tests := []struct {
		name, plugins, want string
	}{
		{"absolute path", "[{path: /etc}]", `4:18: plugins[0].path: "/etc" is absolute`},
		{"dotdot path", "[{path: ../x}]", `plugins[0].path: "../x" leaves the task file's directory`},
		{"symlink out of the task directory", "[{path: escape}]", `"escape" is a symlink that leaves`},
		{"not a directory", "[{path: plugins/file}]", `"plugins/file" is not a directory`},
		{"missing path", "[{mount: /opt/x}]", "plugins[0]: missing required field path"},
		{"unknown field", "[{path: plugins/fmt, allow: [skills]}]", `unknown field "allow"`},
		{"bad name", `[{path: "plugins/bad name"}]`, `the directory's name "bad name"`},
		{"same name twice", "[{path: plugins/fmt}, {path: ./plugins/../plugins/fmt, mount: /opt/x}]", `plugins[0] is also named "fmt"`},
		{"relative mount", "[{path: plugins/fmt, mount: opt/x}]", "must be an absolute, clean container path"},
		{"mount over the workspace", "[{path: plugins/fmt, mount: /workspace/p}]", "overlaps /workspace"},
		{"mount over home", "[{path: plugins/fmt, mount: /home}]", "overlaps /home/agent"},
		{"mount at the root", "[{path: plugins/fmt, mount: /}]", "would cover the whole container"},
		{"nested mounts", "[{path: plugins/fmt, mount: /opt/p}, {path: plugins/lint, mount: /opt/p/lint}]", "overlaps plugins[0]'s /opt/p"},
		{"not a list", "{path: plugins/fmt}", "plugins must be a list"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.plugins)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load = %v, want a problem with %q", err, tc.want)
			}
		})
	}
}
