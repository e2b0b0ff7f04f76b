package verifier

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// findStdlibs finds every CPython 3.6+ standard library of an image, wherever its prefix
// (Debian's /usr, /usr/local, a uv- or pyenv-managed one under a home), reads its
// encodings/__init__.py and names that file's bytecode; it follows no link, skips site
// directories, and fails on an image too big to search. An interpreter the guard cannot run
// in (Python older than 3.6, encodings only as bytecode, a python3N.zip archive) is listed
// as unguarded, for the details' note, and gets no mount.
func TestFindStdlibsFindsEveryInterpreterOfTheImage(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("usr/lib/python3.11/encodings/__init__.py", "debian")
	write("usr/lib/python3.11/encodings/__pycache__/__init__.cpython-311.pyc", "pyc")
	write("usr/lib/python3.11/encodings/__pycache__/utf_8.cpython-311.pyc", "pyc")
	write("usr/local/lib/python3.12/encodings/__init__.py", "local")
	write("root/.local/share/uv/python/cpython-3.13.1-linux-x86_64-gnu/lib/python3.13t/encodings/__init__.py", "uv")
	write("usr/lib/python3.5/encodings/__init__.py", "old")
	write("usr/lib/python3/dist-packages/python3.9/encodings/__init__.py", "inside a site directory")
	write("usr/lib/python3.10/encodings.txt", "no package")
	// unguarded: named in every criterion's details, never bound over (the bytecode-only
	// library is guarded by a directory bound over its encodings)
	write("opt/app/lib/python3.9/encodings/__init__.pyc", "bytecode only")
	write("opt/app/lib/python3.9/encodings/utf_8.pyc", "codec")
	write("opt/embed/lib/python312.zip", "PK")
	write("opt/old/lib/python3.4/encodings/__init__.py", "older than 3.6")
	if err := os.Symlink("lib", filepath.Join(dir, "usr/lib64")); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	libs, err := findStdlibs(r)
	if err != nil {
		t.Fatal(err)
	}
	var got, unguarded []string
	for _, l := range libs {
		if l.unguarded != "" {
			unguarded = append(unguarded, l.dir)
			continue
		}
		if l.bytecode != nil {
			got = append(got, l.dir+"=bytecode:"+string(l.bytecode["__init__.pyc"])+","+string(l.bytecode["utf_8.pyc"]))
			continue
		}
		got = append(got, l.dir+"="+string(l.encoding)+strings.Join(l.pycs, ","))
	}
	slices.Sort(unguarded)
	if want := []string{"/opt/embed/lib/python312.zip", "/opt/old/lib/python3.4", "/usr/lib/python3.5"}; !slices.Equal(unguarded, want) {
		t.Errorf("unguarded interpreters %q, want %q", unguarded, want)
	}
	if notes := unguardedNotes(libs); len(notes) != 3 || !strings.Contains(strings.Join(notes, "\n"), "/opt/embed/lib/python312.zip is not covered by ceval's Python start guard (a standard library archive") {
		t.Errorf("notes %q", notes)
	}
	slices.Sort(got)
	want := []string{
		"/opt/app/lib/python3.9=bytecode:bytecode only,codec",
		"/root/.local/share/uv/python/cpython-3.13.1-linux-x86_64-gnu/lib/python3.13t=uv",
		"/usr/lib/python3.11=debian/usr/lib/python3.11/encodings/__pycache__/__init__.cpython-311.pyc",
		"/usr/local/lib/python3.12=local",
	}
	if !slices.Equal(got, want) {
		t.Errorf("findStdlibs = %q, want %q", got, want)
	}
	mounts, err := pythonStartMounts(filepath.Join(t.TempDir(), "start"), libs, []string{"/workspace"})
	if err != nil {
		t.Fatal(err)
	}
	var dsts []string
	for _, m := range mounts {
		dsts = append(dsts, m.Destination)
		if m.Destination == "/opt/app/lib/python3.9/encodings" {
			b, _ := os.ReadFile(filepath.Join(m.Source, "__init__.py"))
			c, _ := os.ReadFile(filepath.Join(m.Source, "utf_8.pyc"))
			if !strings.Contains(string(b), "marshal.loads") || !strings.Contains(string(b), "cevalImportGuard") || string(c) != "codec" {
				t.Errorf("the bytecode-only encodings: __init__.py %q, utf_8.pyc %q", b, c)
			}
		}
		if strings.HasSuffix(m.Destination, "__init__.py") {
			b, _ := os.ReadFile(m.Source)
			if !strings.Contains(string(b), "cevalImportGuard") || !strings.Contains(string(b), `["/workspace"]`) {
				t.Errorf("%s: no guard for /workspace in %q", m.Destination, b)
			}
		}
	}
	if len(dsts) != 5 || !slices.Contains(dsts, "/opt/app/lib/python3.9/encodings") || !slices.Contains(dsts, "/usr/lib/python3.11/encodings/__pycache__/__init__.cpython-311.pyc") {
		t.Errorf("mounts over %q", dsts)
	}
}
