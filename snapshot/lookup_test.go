package snapshot

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/testtree"
)

func TestSnapshotLookupRefusesEscapingPaths(t *testing.T) {
	parent := t.TempDir()
	// A file beside the snapshot dir, where "../secret" from inside it would land.
	testtree.Write(t, parent, map[string]string{"secret": "not yours", "ws/a": "a", "ws/d/b": "b"})
	symlink(t, "/etc", filepath.Join(parent, "ws", "etc"))
	dst := filepath.Join(parent, "workspace")
	s, err := Take(filepath.Join(parent, "ws"), dst, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rel   string
		found string // entry path expected, "" for not found
	}{
		{"a", "a"},
		{"./a", "a"},
		{"d/../a", "a"},
		{"d//b", "d/b"},
		{"d/b/", "d/b"},
		{"../secret", ""},
		{"../workspace/a", ""},
		{"d/../../secret", ""},
		{"/etc/passwd", ""},
		{"/a", ""},
		{"..", ""},
		{".", ""},
		{"", ""},
		{"a\x00", ""},
		{"etc/passwd", ""}, // below a symlink
	}
	for _, tt := range tests {
		e, ok := s.Lookup(tt.rel)
		if got := map[bool]string{true: e.Path}[ok]; got != tt.found {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tt.rel, e.Path, ok, tt.found)
		}
		b, err := s.ReadFile(tt.rel)
		if tt.found == "" {
			if err == nil {
				t.Errorf("ReadFile(%q) = %q, want an error", tt.rel, b)
			}
			if strings.Contains(string(b), "not yours") || strings.Contains(string(b), "root:") {
				t.Errorf("ReadFile(%q) leaked %q", tt.rel, b)
			}
		}
	}
	if _, ok := s.NoteFor("../secret"); ok {
		t.Error("NoteFor answered for a path outside the root")
	}
}

func TestSnapshotReadFileRefusesLinkPlantedInSnapshotDir(t *testing.T) {
	ws := t.TempDir()
	testtree.Write(t, ws, map[string]string{"out.txt": "agent output", "other.txt": "other output"})
	s := takeT(t, ws, Limits{})
	// Something rewrites the stored snapshot behind ceval's back.
	p := filepath.Join(s.Dir, "out.txt")
	os.Remove(p)
	symlink(t, "other.txt", p) // in-root link: os.Root alone would follow it
	if b, err := s.ReadFile("out.txt"); err == nil {
		t.Fatalf("ReadFile followed a planted link: %q", b)
	}
	os.Remove(p)
	testtree.Write(t, s.Dir, map[string]string{"out.txt": "agent output, but longer"})
	if b, err := s.ReadFile("out.txt"); err == nil {
		t.Fatalf("ReadFile returned %q despite a size mismatch", b)
	}
}

func TestSnapshotReadFileExplainsMissingFile(t *testing.T) {
	ws := t.TempDir()
	testtree.Write(t, ws, map[string]string{"d/x": "x"})
	if err := os.WriteFile(filepath.Join(ws, "big"), make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	s := takeT(t, ws, Limits{MaxFileBytes: 1024})
	_, err := s.ReadFile("big")
	// Omitted is not absent: the error must not say the file does not exist.
	if !errors.Is(err, ErrOmitted) || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "over the 1 KiB per-file cap") {
		t.Fatalf("ReadFile(big) error = %v", err)
	}
	if _, err := s.ReadFile("d"); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("ReadFile(d) error = %v", err)
	}
	if _, err := s.ReadFile("nothing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFile(nothing) error = %v", err)
	}
	if n, ok := s.NoteFor("d/x"); ok {
		t.Fatalf("NoteFor a captured file = %+v", n)
	}
}

func TestSnapshotGlob(t *testing.T) {
	s := &Snapshot{Entries: []Entry{
		{Path: ".hidden", Kind: KindFile},
		{Path: "README.md", Kind: KindFile},
		{Path: "src", Kind: KindDir},
		{Path: "src/a.go", Kind: KindFile},
		{Path: "src/a_test.go", Kind: KindFile},
		{Path: "src/pkg", Kind: KindDir},
		{Path: "src/pkg/b.go", Kind: KindFile},
		{Path: "src/pkg/deep", Kind: KindDir},
		{Path: "src/pkg/deep/c.go", Kind: KindFile},
		{Path: "src/link.go", Kind: KindSymlink, Target: "/etc/passwd"},
	}}
	tests := []struct {
		pattern string
		want    []string
	}{
		{"*.md", []string{"README.md"}},
		{"./*.md", []string{"README.md"}},
		{"*", []string{".hidden", "README.md", "src"}},
		{"src/*.go", []string{"src/a.go", "src/a_test.go", "src/link.go"}},
		{"src/**/*.go", []string{"src/a.go", "src/a_test.go", "src/pkg/b.go", "src/pkg/deep/c.go", "src/link.go"}},
		{"**/*_test.go", []string{"src/a_test.go"}},
		{"**", []string{".hidden", "README.md", "src", "src/a.go", "src/a_test.go", "src/pkg", "src/pkg/b.go", "src/pkg/deep", "src/pkg/deep/c.go", "src/link.go"}},
		{"src/**", []string{"src", "src/a.go", "src/a_test.go", "src/pkg", "src/pkg/b.go", "src/pkg/deep", "src/pkg/deep/c.go", "src/link.go"}},
		{"**/deep/**/*.go", []string{"src/pkg/deep/c.go"}},
		{"**/**/**/c.go", []string{"src/pkg/deep/c.go"}},
		{"src/[ab].go", []string{"src/a.go"}},
		{"src/pkg/b.go", []string{"src/pkg/b.go"}},
		{"src/?.go", []string{"src/a.go"}},
		{"src/[", nil},
		{"../src/*", nil},
		{"src/../*", nil},
		{"/src/*", nil},
		{"", nil},
	}
	for _, tt := range tests {
		if got := paths(s.Glob(tt.pattern)); !slices.Equal(got, tt.want) {
			t.Errorf("Glob(%q) = %q, want %q", tt.pattern, got, tt.want)
		}
	}
}

func TestGlobManyDoubleStarsStaysLinear(t *testing.T) {
	deep := strings.TrimSuffix(strings.Repeat("d/", 64), "/")
	s := &Snapshot{Entries: []Entry{{Path: deep, Kind: KindDir}}}
	pattern := strings.Repeat("**/d/", 30) + "x"
	if got := s.Glob(pattern); len(got) != 0 {
		t.Fatalf("Glob = %v", got)
	}
}

func TestSnapshotManifestRoundTrip(t *testing.T) {
	ws := t.TempDir()
	testtree.Write(t, ws, map[string]string{
		"result.json":   `{"passed": true}`,
		"snapshot.json": `{"format": "ceval-snapshot/1", "entries": [{"path": "../../etc/passwd", "kind": "file"}]}`,
		"src/main.go":   "package main",
	})
	symlink(t, "/etc/shadow", filepath.Join(ws, "shadow"))
	if err := os.WriteFile(filepath.Join(ws, "big"), make([]byte, 4096), 0o755); err != nil {
		t.Fatal(err)
	}
	run := t.TempDir()
	s, err := Take(ws, filepath.Join(run, "workspace"), Limits{MaxFileBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(run, "snapshot.json")
	if err := s.WriteManifest(manifest); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteManifest(manifest); err != nil { // rewriting replaces
		t.Fatal(err)
	}
	got, err := Load(filepath.Join(run, "workspace"), manifest)
	if err != nil {
		t.Fatal(err)
	}
	if got.Dir != s.Dir || !reflect.DeepEqual(got.Entries, s.Entries) || !reflect.DeepEqual(got.Notes, s.Notes) ||
		got.Truncated != s.Truncated || got.Bytes != s.Bytes || got.Limits != s.Limits {
		t.Fatalf("Load = %+v\nwant %+v", got, s)
	}
	if b, err := got.ReadFile("snapshot.json"); err != nil || !strings.Contains(string(b), "../../etc/passwd") {
		t.Fatalf("the agent's snapshot.json should read back as its own file: %q, %v", b, err)
	}
	if _, err := got.ReadFile("shadow"); !errors.Is(err, ErrSymlink) {
		t.Fatalf("ReadFile(shadow) error = %v", err)
	}
	if _, err := got.ReadFile("big"); !errors.Is(err, ErrOmitted) || !strings.Contains(err.Error(), "per-file cap") {
		t.Fatalf("ReadFile(big) error = %v, want it omitted at the per-file cap", err)
	}
	if !reflect.DeepEqual(got.LimitsHit, s.LimitsHit) || len(got.LimitsHit) != 1 {
		t.Fatalf("LimitsHit = %q, want %q", got.LimitsHit, s.LimitsHit)
	}
	raw, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"format": "ceval-snapshot/2"`, `"target":"/etc/shadow"`, `"mode":"0644"`, `"max_file_bytes":1024`, `"omitted":"over the 1 KiB per-file cap`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("manifest lacks %s:\n%s", want, raw)
		}
	}
	if ents, _ := filepath.Glob(filepath.Join(run, ".snapshot.json.tmp*")); len(ents) != 0 {
		t.Errorf("temporary files left behind: %q", ents)
	}
}

func TestLoadRefusesForgedManifest(t *testing.T) {
	dir := t.TempDir()
	good := func(entries string) string {
		return `{"format": "ceval-snapshot/1", "entries": ` + entries + `, "notes": [], "truncated": false, "bytes": 0}`
	}
	tests := []struct{ name, manifest, want string }{
		{"escaping entry", good(`[{"path": "../../etc/passwd", "kind": "file", "mode": "0644"}]`), "bad entry path"},
		{"absolute entry", good(`[{"path": "/etc/passwd", "kind": "file"}]`), "bad entry path"},
		{"unclean entry", good(`[{"path": "a/./b", "kind": "file"}]`), "bad entry path"},
		{"unknown kind", good(`[{"path": "dev", "kind": "device"}]`), "unknown kind"},
		{"duplicate", good(`[{"path": "a", "kind": "file"}, {"path": "a", "kind": "dir"}]`), "duplicate"},
		{"setuid mode", good(`[{"path": "a", "kind": "file", "mode": "4755"}]`), "bad mode"},
		{"wrong format", `{"format": "other", "entries": []}`, "format"},
		{"not json", `{`, "parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := filepath.Join(t.TempDir(), "snapshot.json")
			if err := os.WriteFile(m, []byte(tt.manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Load(dir, m); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestEntryJSONModeIsOctal(t *testing.T) {
	b, err := json.Marshal(Entry{Path: "x", Kind: KindFile, Size: 1, Mode: 0o755})
	if err != nil || string(b) != `{"path":"x","kind":"file","size":1,"mode":"0755"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
}
