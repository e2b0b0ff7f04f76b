package task

import (
	"slices"
	"strings"
	"testing"
)

func TestOutputsAndAbsoluteCriterionPathsBelowThem(t *testing.T) {
	doc := "task_id: t\ninitial_prompt: p\nsandbox: {outputs: [/tmp, /output]}\nsuccess_criteria:\n" +
		"  - {type: file_contains, path: /output/x.txt, includes: [ok]}\n" +
		"  - {type: file_exists, path: '/tmp/**/*.log'}\n" +
		"  - {type: file_exists, path: rel.txt}\n"
	tk, err := Load(writeTask(t, doc, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tk.Sandbox.Outputs, []string{"/tmp", "/output"}) {
		t.Errorf("outputs = %q", tk.Sandbox.Outputs)
	}
	if got := []string{tk.Criteria[0].Spec.(*FileContainsSpec).Path, tk.Criteria[1].Spec.(*FileExistsSpec).Path, tk.Criteria[2].Spec.(*FileExistsSpec).Path}; !slices.Equal(got, []string{"/output/x.txt", "/tmp/**/*.log", "rel.txt"}) {
		t.Errorf("paths = %q", got)
	}
}

func TestOutputsProblemsNameTheirLine(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"relative", "sandbox: {outputs: [out]}", `3:21: sandbox.outputs[0]: "out" must be an absolute`},
		{"root", "sandbox: {outputs: [/]}", `3:21: sandbox.outputs[0]: "/" would cover the whole container`},
		{"workspace", "sandbox: {outputs: [/workspace/out]}", `overlaps /workspace`},
		{"above home", "sandbox: {outputs: [/home]}", `overlaps /home/agent`},
		{"nested", "sandbox: {outputs: [/out, /out/a]}", `3:27: sandbox.outputs[1]: "/out/a" overlaps sandbox.outputs entry "/out"`},
		{"unclean", "sandbox: {outputs: [/out/../etc]}", `must be an absolute, clean`},
		{"glob", "sandbox: {outputs: ['/o*']}", `has glob characters`},
		{"system libraries", "sandbox: {outputs: [/usr/local/lib]}", `overlaps /usr: an output there`},
		{"verifier's grader files", "sandbox: {outputs: [/task]}", `overlaps /task`},
		{"above the plugins", "sandbox: {outputs: [/opt]}", `overlaps /opt/ceval/plugins`},
	} {
		doc := "task_id: t\ninitial_prompt: p\n" + tc.doc + "\nsuccess_criteria: [{type: file_exists, path: x}]\n"
		_, err := Load(writeTask(t, doc, nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// An absolute criterion path must be below a declared output: nothing else is copied out.
func TestAbsoluteCriterionPathOutsideOutputsIsRefused(t *testing.T) {
	for _, tc := range []struct{ sandbox, path string }{
		{"", "/etc/passwd"},
		{"sandbox: {outputs: [/output]}\n", "/outputs/x"},
		{"sandbox: {outputs: [/output]}\n", "/output"},
		{"sandbox: {outputs: [/output]}\n", "/output/../etc/passwd"},
	} {
		doc := "task_id: t\ninitial_prompt: p\n" + tc.sandbox + "success_criteria: [{type: file_contains, path: '" + tc.path + "', includes: [x]}]\n"
		_, err := Load(writeTask(t, doc, nil))
		if err == nil || !strings.Contains(err.Error(), "path") {
			t.Errorf("path %s with %q: err = %v, want it refused", tc.path, tc.sandbox, err)
		}
	}
}
