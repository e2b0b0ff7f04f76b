package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"ceval.dev/ceval/selftest"
)

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
