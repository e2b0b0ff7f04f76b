package verifier

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zipOf is a zip archive holding files (name -> content).
func zipOf(t *testing.T, files map[string]string) string {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, content := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(content))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A zip archive in the workspace that holds an encodings package or module (at its root or
// below, since PYTHONPATH may name a directory inside an archive) is left out of the
// verifier's copy with a note, whatever the file is called: CPython's zipimport reads any
// file with a zip directory at its end, so PYTHONPATH=/workspace/deps.zip, or the
// lib/python311.zip that PYTHONHOME=/workspace puts first, would run the agent's encodings
// before the Python start guard; one whose directory Go cannot read is left out if it names
// encodings at all. An archive without one, and a file that merely ends like one, are
// copied. Red without the archive check: both archives are copied.
func TestVerifierCopyLeavesOutAZipHoldingEncodings(t *testing.T) {
	stdlibZip := zipOf(t, map[string]string{"encodings/__init__.py": "import os\nos._exit(0)\n", "codecs.py": ""})
	deep := zipOf(t, map[string]string{"src/encodings.py": "import os\nos._exit(0)\n"})
	prefixed := "#!/bin/sh\nexec python3 \"$0\"\n" + zipOf(t, map[string]string{"encodings/__init__.pyc": "x"}) // a self-running archive
	fine := zipOf(t, map[string]string{"docs/encodings.txt": "utf-8, latin-1", "pkg/mod.py": "X = 1\n"})
	s := snap(t, map[string]string{
		"lib/python311.zip": stdlibZip, "deps.whl": deep, "run.pyz": prefixed, "docs.zip": fine,
		"notes.txt":   "not a zip, though it ends with PK\x05\x06",
		"broken.zip":  "encodings/__init__.py" + stdlibZip[len(stdlibZip)-22:], // a directory Go cannot read: left out
		"solution.py": "ANSWER = 1\n",
	})
	dst := t.TempDir()
	notes, err := copySnapshot(s, dst)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"lib/python311.zip", "deps.whl", "run.pyz", "broken.zip"} {
		if _, err := os.Lstat(filepath.Join(dst, p)); err == nil {
			t.Errorf("%s, a zip holding encodings, was copied", p)
		}
	}
	for _, p := range []string{"docs.zip", "notes.txt", "solution.py"} {
		if _, err := os.Lstat(filepath.Join(dst, p)); err != nil {
			t.Errorf("%s was left out: %v", p, err)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "lib/python311.zip (a zip archive holding encodings)") || !strings.Contains(notes[0], "runs before ceval's import guard") {
		t.Errorf("notes %q", notes)
	}
}
