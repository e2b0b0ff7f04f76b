package wasm

import (
	"os"
	"path/filepath"
	"testing"

	"ceval.dev/ceval/task"
)

// graderTask writes a task directory with a checks/ directory of grader files and a
// secret file beside it that no criterion may see.
func graderTask(t *testing.T, cn canary) (string, []task.GraderFile) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"task.yaml":           "task_id: x\n",
		"hidden_answers.txt":  "SECRET-ANSWERS\n",
		"checks/check.py":     "import json, os, sys\nd = json.load(open('out.json'))\nprint('answer', d['answer'], os.environ['TASK_DIR'])\n",
		"checks/lib/util.txt": "util\n",
		"single.txt":          "single\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(cn.path, filepath.Join(dir, "checks", "canary")); err != nil {
		t.Fatal(err)
	}
	root, err := task.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return dir, []task.GraderFile{{Root: root, Rel: "checks", Dir: true}, {Root: root, Rel: "single.txt"}}
}

func TestGraderFilesAreTheOnlyTaskFilesACriterionSees(t *testing.T) {
	cn := hostCanary(t)
	_, files := graderTask(t, cn)
	e := pyExecutor(t, Options{})
	s := workspace(t, map[string]string{"out.json": `{"answer": 42}`}, nil)
	for _, tc := range []struct{ name, script, stdout string }{
		{"checker script from /task", `python3 $TASK_DIR/checks/check.py`, "answer 42 /task\n"},
		{"only the grader files", `cd /task && find . | sort`, ".\n./checks\n./checks/canary\n./checks/check.py\n./checks/lib\n./checks/lib/util.txt\n./single.txt\n"},
		{"hidden task file absent", `cat /task/hidden_answers.txt /task/task.yaml 2>/dev/null; echo $?`, "1\n"},
		{"read-only", `echo x > /task/single.txt 2>/dev/null; echo x > /task/new 2>/dev/null; cat /task/single.txt; test -e /task/new || echo no-new`, "single\nno-new\n"},
		{"link to the host not followed", `cat /task/checks/canary 2>/dev/null; python3 -c 'print(open("/task/checks/canary").read())' 2>/dev/null; echo done`, "done\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := command(tc.script)
			c.Execution().GraderFiles = files
			r, _, details := runScript(t, e, c, s, nil)
			cn.assertAbsent(t, tc.script, r.Stdout, r.Stderr, []byte(details))
			if string(r.Stdout) != tc.stdout {
				t.Errorf("stdout %q, want %q (stderr %s)", r.Stdout, tc.stdout, r.Stderr)
			}
		})
	}
	t.Run("no grader files, no /task", func(t *testing.T) {
		r, _, _ := runScript(t, e, command(`test -e /task && echo present; echo "[$TASK_DIR]"`), s, nil)
		if string(r.Stdout) != "[]\n" {
			t.Errorf("stdout %q", r.Stdout)
		}
	})
}
