package task

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSandboxPackagesPickThePackageImage(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "wheels"), 0o755); err != nil {
		t.Fatal(err)
	}
	base := "task_id: t\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: a}]\n"
	parse := func(doc string) *Task {
		t.Helper()
		tk, err := Parse("task.yaml", dir, []byte(base+doc))
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	a := parse("sandbox: {packages: [python3, git]}\n")
	if !strings.HasPrefix(a.Sandbox.Image, PackageImageRepo+":") || a.Sandbox.Image != a.Sandbox.PackageImage() {
		t.Fatalf("image %q, want the package image %q", a.Sandbox.Image, a.Sandbox.PackageImage())
	}
	if b := parse("sandbox: {packages: [git, python3]}\n"); b.Sandbox.Image != a.Sandbox.Image {
		t.Errorf("the order of packages changes the image: %s vs %s", b.Sandbox.Image, a.Sandbox.Image)
	}
	if c := parse("sandbox: {packages: [git]}\n"); c.Sandbox.Image == a.Sandbox.Image {
		t.Errorf("another package list gets the same image %s", c.Sandbox.Image)
	}
	if d := parse("sandbox: {image: my/img:1, packages: [git]}\n"); d.Sandbox.Image != "my/img:1" {
		t.Errorf("sandbox.image given: image %q, want it to win", d.Sandbox.Image)
	}
	if e := parse("sandbox: {}\n"); e.Sandbox.Image != DefaultImage || e.Sandbox.PackageImage() != "" {
		t.Errorf("no packages: image %q", e.Sandbox.Image)
	}
	p := parse("sandbox: {packages: [python3], pip: ['six==1.16.0'], pip_find_links: wheels}\n")
	if p.Sandbox.PipFindLinks.Path != filepath.Join(dir, "wheels") || len(p.Sandbox.Pip) != 1 {
		t.Errorf("pip: %+v", p.Sandbox)
	}
}

// A package list is handed to mmdebstrap and pip: anything that could pass for one of
// their options is refused at the line that holds it.
func TestSandboxPackagesRefuseOptionInjection(t *testing.T) {
	dir := t.TempDir()
	base := "task_id: t\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: a}]\n"
	for _, c := range []struct{ doc, want string }{
		{"sandbox:\n  packages:\n    - git\n    - --customize-hook=id\n", "task.yaml:7:7: sandbox.packages[1]: \"--customize-hook=id\" is not a Debian package name"},
		{"sandbox:\n  packages: [\"python3,curl\"]\n", "task.yaml:5:14: sandbox.packages[0]"},
		{"sandbox:\n  pip: [requests]\n  pip_find_links: .\n", "task.yaml:5:9: sandbox.pip[0]: \"requests\" is not a pinned requirement"},
		{"sandbox:\n  pip: ['a==1 --index-url=http://x']\n  pip_find_links: .\n", "is not --hash=sha256:HEX"},
		{"sandbox:\n  pip: ['a==1']\n", "task.yaml:5:8: sandbox.pip needs sandbox.pip_find_links"},
		{"sandbox:\n  pip_find_links: ../x\n", "sandbox.pip_find_links"},
	} {
		_, err := Parse("task.yaml", dir, []byte(base+c.doc))
		var ps Problems
		if !errors.As(err, &ps) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want a problem containing %q", c.doc, err, c.want)
		}
	}
}
