package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/testtree"
)

func writeMockTask(t *testing.T, mocks string, files map[string]string) string {
	t.Helper()
	dir := testtree.New(t, files)
	p := filepath.Join(dir, "task.yaml")
	src := "task_id: t\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: x}]\nprotected_mocks:\n" + mocks
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProtectedMocksLoadWithDefaults(t *testing.T) {
	p := writeMockTask(t, "  - {tool: gh, fixture: mocks/gh.yaml}\n  - {tool: uipath, fixture: u.json, max_requests: 7}\n", map[string]string{
		"mocks/gh.yaml": "version: 1\nresponses: [{argv: [pr, list], stdout: x}]\n",
		"u.json":        `{"version": 1, "default": {"exit_code": 3}}`,
	})
	tk, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(tk.ProtectedMocks) != 2 {
		t.Fatalf("mocks %+v", tk.ProtectedMocks)
	}
	gh, u := tk.ProtectedMocks[0], tk.ProtectedMocks[1]
	if gh.Tool != "gh" || gh.MaxRequests != DefaultMockRequests || gh.FixturePath != filepath.Join(tk.Dir, "mocks/gh.yaml") || len(gh.Fixture.Responses) != 1 {
		t.Errorf("gh %+v", gh)
	}
	if u.MaxRequests != 7 || u.Fixture.Default == nil || u.Fixture.Default.ExitCode != 3 {
		t.Errorf("uipath %+v", u)
	}
}

func TestProtectedMocksRefuseBadEntries(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	os.WriteFile(outside, []byte("version: 1\ndefault: {}\n"), 0o644)
	tests := []struct {
		name  string
		mocks string
		files map[string]string
		want  []string
	}{
		{"fixture leaves the task dir", "  - {tool: gh, fixture: ../x.yaml}\n", nil, []string{`5:25: protected_mocks[0].fixture: "../x.yaml" leaves`}},
		{"fixture symlink out of the task dir", "  - {tool: gh, fixture: link.yaml}\n", nil, []string{`5:25: protected_mocks[0].fixture: "link.yaml" is a symlink that leaves`}},
		{"bad tool name", "  - {tool: ../gh, fixture: f.yaml}\n", map[string]string{"f.yaml": "version: 1\ndefault: {}\n"}, []string{`5:12: protected_mocks[0].tool "../gh"`}},
		{"duplicate tool", "  - {tool: gh, fixture: f.yaml}\n  - {tool: gh, fixture: f.yaml}\n", map[string]string{"f.yaml": "version: 1\ndefault: {}\n"}, []string{"6:6: protected_mocks[1].tool: protected_mocks[0] already mocks"}},
		{"max_requests out of range", "  - {tool: gh, fixture: f.yaml, max_requests: 10001}\n", map[string]string{"f.yaml": "version: 1\ndefault: {}\n"}, []string{"5:47: protected_mocks[0].max_requests"}},
		{"fixture problems at their own line", "  - {tool: gh, fixture: f.yaml}\n", map[string]string{"f.yaml": "version: 1\nresponses:\n  - argv: [a]\n    match: fuzzy\n"}, []string{"f.yaml:4:12: fixture: responses[0].match \"fuzzy\""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeMockTask(t, tt.mocks, tt.files)
			os.Symlink(outside, filepath.Join(filepath.Dir(p), "link.yaml"))
			_, err := Load(p)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("want %q in:\n%v", w, err)
				}
			}
		})
	}
}
