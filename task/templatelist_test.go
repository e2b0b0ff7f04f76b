package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTemplateDirListErrorsNameTheEntryAndLine: each entry of a template_dir list is
// checked like a single template_dir, and an error names the entry's index and line.
func TestTemplateDirListErrorsNameTheEntryAndLine(t *testing.T) {
	for _, tc := range []struct{ list, want string }{
		{"[a, missing]", "task.yaml:6:23: sandbox.workspace.template_dir[1]: "},
		{"[a, ../out]", "task.yaml:6:23: sandbox.workspace.template_dir[1]: "},
		{"[]", "task.yaml:6:19: sandbox.workspace.template_dir: an empty list"},
		{"\n      - a\n      - 7b", "task.yaml:8:9: sandbox.workspace.template_dir[1]: "},
	} {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "a"), 0o755)
		p := filepath.Join(dir, "task.yaml")
		os.WriteFile(p, []byte("task_id: t\ninitial_prompt: p\nagent: {type: command, command: [/bin/true]}\nsandbox:\n  workspace:\n    template_dir: "+tc.list+"\nsuccess_criteria:\n  - {type: file_exists, path: x}\n"), 0o644)
		tk, err := Load(p)
		if err == nil {
			tk.Close()
			t.Errorf("%s: loaded", tc.list)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %q", tc.list, err, tc.want)
		}
	}
}
