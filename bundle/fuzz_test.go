package bundle

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzManifest feeds arbitrary manifests to the parser and to verification against one
// real built tree: parsing never panics, a parsed manifest survives a round trip, and
// verification reports no difference exactly when the manifest's digest is the tree's.
func FuzzManifest(f *testing.F) {
	out, _, err := build(f, verifySource, Options{})
	if err != nil {
		f.Fatal(err)
	}
	real, err := os.ReadFile(filepath.Join(out, ManifestFile))
	if err != nil {
		f.Fatal(err)
	}
	root, err := os.OpenRoot(out)
	if err != nil {
		f.Fatal(err)
	}
	defer root.Close()
	got, issues, err := scanTree(root)
	if err != nil || len(issues) > 0 {
		f.Fatal(err, issues)
	}
	treeDigest := Digest(got)

	f.Add(real)
	f.Add([]byte(strings.Replace(string(real), `"SKILL.md"`, `"../../x"`, 1)))
	f.Add([]byte(strings.Replace(string(real), `"0444"`, `"0644"`, 1)))
	f.Add([]byte(`{"version":1,"tree_sha256":"` + Digest([]Entry{}) + `","entries":[]}`))
	f.Add([]byte(`{"version":1,"tree_sha256":"","entries":[{"path":"a","kind":"dir","mode":"0555"},{"path":"a/l","kind":"symlink","target":"l"}]}`))
	f.Add([]byte(`{"version":1} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		if Digest(m.Entries) != m.TreeSHA256 {
			t.Fatalf("parsed a manifest whose digest does not match its entries")
		}
		again, err := ParseManifest(m.encode())
		if err != nil {
			t.Fatalf("re-encoded manifest does not parse: %v", err)
		}
		if !reflect.DeepEqual(m, again) {
			t.Fatalf("round trip changed the manifest:\n%+v\n%+v", m, again)
		}
		diffs := compare(m.Entries, got)
		if (len(diffs) == 0) != (m.TreeSHA256 == treeDigest) {
			t.Fatalf("%d differences but digest equality is %v: %v", len(diffs), m.TreeSHA256 == treeDigest, diffs)
		}
		if d := compare(m.Entries, m.Entries); len(d) != 0 {
			t.Fatalf("a manifest differs from itself: %v", d)
		}
	})
}
