package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestReadmeLayoutListsEveryPackage: the README's Layout table names every package of the
// module (it once listed 13 of 26), so a newcomer finds where each piece lives.
func TestReadmeLayoutListsEveryPackage(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	start := strings.Index(readme, "\n## Layout\n")
	if start < 0 {
		t.Fatal("README.md has no ## Layout section")
	}
	layout := readme[start+1:]
	if end := strings.Index(layout[3:], "\n## "); end >= 0 {
		layout = layout[:end+3]
	}
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	// The first cell of each table row: "| `a`, `b` | owns | must not |".
	var dirs string
	for _, line := range strings.Split(layout, "\n") {
		if cells := strings.Split(line, "|"); len(cells) > 2 && strings.HasPrefix(line, "| ") {
			dirs += cells[1]
		}
	}
	for _, pkg := range strings.Fields(string(out)) {
		dir := strings.TrimPrefix(strings.TrimPrefix(pkg, "ceval.dev/ceval"), "/")
		if !strings.Contains(dirs, "`"+dir+"`") {
			t.Errorf("README.md's Layout does not list package %s", dir)
		}
	}
}
