package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const solutionBase = "task_id: t\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: a.txt}]\n"

func TestSolutionScriptAndFilesAreOpenedAtLoad(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		files     map[string]string
		script    bool
	}{
		{"script", "solution: {script: solution/solve.sh}\n", map[string]string{"solution/solve.sh": "touch a.txt\n"}, true},
		{"files", "solution: {files: solution}\n", map[string]string{"solution/a.txt": "done\n"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk, err := Load(writeTask(t, solutionBase+tc.doc, tc.files))
			if err != nil {
				t.Fatal(err)
			}
			defer tk.Close()
			s := tk.Solution
			if s == nil || (s.Script != nil) != tc.script || (s.Files != nil) == tc.script {
				t.Fatalf("solution = %+v", s)
			}
			if s.Line != 4 {
				t.Errorf("solution line = %d, want 4", s.Line)
			}
			if tc.script {
				if b, err := s.Script.ReadAll(1 << 10); err != nil || string(b) != "touch a.txt\n" {
					t.Errorf("script = %q, %v", b, err)
				}
			} else if _, err := s.Files.Root().Stat("a.txt"); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestSolutionNeedsExactlyOneOfScriptAndFiles(t *testing.T) {
	for _, doc := range []string{
		"solution: {}\n",
		"solution: {script: s.sh, files: sol}\n",
		"solution: {script: missing.sh}\n",
		"solution: {files: s.sh}\n",
		"solution: {script: ../s.sh}\n",
		"solution: {oracle: s.sh}\n",
	} {
		_, err := Load(writeTask(t, solutionBase+doc, map[string]string{"s.sh": "true\n", "sol/a.txt": "x"}))
		if err == nil || !strings.Contains(err.Error(), "task.yaml:4:") {
			t.Errorf("%q: err = %v, want a problem at line 4", doc, err)
		}
	}
}

// The task author keeps the solution where the agent's container gets a copy of it: inside
// the template directory (by path, by a symlink into it, or as a hard link of a template
// file) or inside a plugin. Load must refuse every one, or the agent reads the answer.
func TestSolutionTheAgentWouldSeeIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		prep      func(dir string) error
	}{
		{"script inside template", "sandbox: {workspace: {template_dir: tpl}}\nsolution: {script: tpl/solve.sh}\n", nil},
		{"files are the template", "sandbox: {workspace: {template_dir: tpl}}\nsolution: {files: tpl}\n", nil},
		{"files inside template", "sandbox: {workspace: {template_dir: tpl}}\nsolution: {files: tpl/sol}\n", nil},
		{"symlink into template", "sandbox: {workspace: {template_dir: tpl}}\nsolution: {files: sol}\n",
			func(dir string) error { return os.Symlink("tpl/sol", filepath.Join(dir, "sol")) }},
		{"hard link of a template file", "sandbox: {workspace: {template_dir: tpl}}\nsolution: {script: solve.sh}\n",
			func(dir string) error {
				return os.Link(filepath.Join(dir, "tpl/solve.sh"), filepath.Join(dir, "solve.sh"))
			}},
		{"script inside plugin", "plugins: [{path: tpl}]\nsolution: {script: tpl/solve.sh}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTask(t, solutionBase+tc.doc, map[string]string{"tpl/solve.sh": "touch a.txt\n", "tpl/sol/a.txt": "x"})
			if tc.prep != nil {
				if err := tc.prep(filepath.Dir(p)); err != nil {
					t.Fatal(err)
				}
			}
			tk, err := Load(p)
			if err == nil {
				tk.Close()
				t.Fatal("loaded; the agent's container would hold the solution")
			}
			if !strings.Contains(err.Error(), "holds the solution") {
				t.Fatalf("err = %v, want 'holds the solution'", err)
			}
		})
	}
}

func TestSolutionBesideTemplateIsAccepted(t *testing.T) {
	p := writeTask(t, solutionBase+"sandbox: {workspace: {template_dir: tpl}}\nsolution: {files: sol}\n",
		map[string]string{"tpl/a.txt": "start", "sol/a.txt": "x"})
	tk, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	tk.Close()
}
