package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"ceval.dev/ceval/selftest"
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

// TestSecurityDocCountsTheAttacksTheBinaryShips: docs/security.md says how many agent attacks
// ceval selftest ships (its count went stale three times in one session of merges).
func TestSecurityDocCountsTheAttacksTheBinaryShips(t *testing.T) {
	data, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	attacks, err := selftest.Attacks()
	if err != nil {
		t.Fatal(err)
	}
	agent := 0
	for _, a := range attacks {
		if !strings.HasPrefix(a.Name, "load-") {
			agent++
		}
	}
	if want := fmt.Sprintf("ships %d attacks inside the binary", agent); !strings.Contains(string(data), want) {
		t.Errorf("docs/security.md does not say %q", want)
	}
}
