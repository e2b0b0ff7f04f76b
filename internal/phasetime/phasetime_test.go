package phasetime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSpansAreAppendedOnlyWhenTheVariableNamesAFile(t *testing.T) {
	old := path
	defer func() { path = old }()
	path = ""
	Span("nothing")()
	Mark("nothing")
	if Enabled() {
		t.Fatal("enabled without the variable")
	}
	path = filepath.Join(t.TempDir(), "phases")
	end := Span("a")
	Mark("b")
	end()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "b\t") || !strings.HasPrefix(lines[1], "a\t") {
		t.Fatalf("lines %q, want b then a", lines)
	}
	for _, l := range lines {
		if f := strings.Split(l, "\t"); len(f) != 3 || f[1] > f[2] && len(f[1]) == len(f[2]) {
			t.Fatalf("line %q: want NAME START END with START <= END", l)
		}
	}
}
