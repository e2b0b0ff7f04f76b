package bundle

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

var verifySource = tree{
	"skills/fix/SKILL.md":       "---\nname: fix\n---\nFix it.\n",
	"skills/fix/alias.md":       "-> SKILL.md",
	"skills/fix/scripts/run.sh": "x:#!/bin/sh\n",
	"commands/go.md":            "Go.",
}

// built returns a fresh bundle of verifySource whose files the test may change (the
// tests run as root, which read-only modes do not stop; the mode is restored regardless).
func built(t *testing.T) string {
	t.Helper()
	out, _, err := build(t, verifySource, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(out); err != nil {
		t.Fatalf("fresh build does not verify: %v", err)
	}
	return out
}

// writable runs f with dir made writable for a moment, the way an attacker with the
// owner's rights would.
func writable(t *testing.T, dir string, f func() error) {
	t.Helper()
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	defer os.Chmod(dir, fi.Mode().Perm())
	if err := f(); err != nil {
		t.Fatal(err)
	}
}

// drift verifies out and returns the differences, failing unless Verify reported drift.
func drift(t *testing.T, out string) []Diff {
	t.Helper()
	_, err := Verify(out)
	var de *DriftError
	if !errors.As(err, &de) {
		t.Fatalf("Verify = %v, want a DriftError", err)
	}
	return de.Diffs
}

func wantDiffs(t *testing.T, got []Diff, want ...string) {
	t.Helper()
	var s []string
	for _, d := range got {
		s = append(s, d.String())
	}
	if len(got) != len(want) {
		t.Fatalf("diffs =\n%s\nwant %d", strings.Join(s, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.Contains(s[i], w) {
			t.Errorf("diff %d = %q, want it to contain %q", i, s[i], w)
		}
	}
}

func TestVerifyDetectsByteChangedAfterBuild(t *testing.T) {
	out := built(t)
	p := filepath.Join(out, TreeDir, "skills/fix/SKILL.md")
	data, _ := os.ReadFile(p)
	data[len(data)-2] ^= 1
	writable(t, p, func() error { return os.WriteFile(p, data, 0o444) })
	wantDiffs(t, drift(t, out), "skills/fix/SKILL.md: content changed")
	var de *DriftError
	if _, err := Verify(out); !errors.As(err, &de) || de.Got == de.Want {
		t.Errorf("a changed byte left the tree digest as it was: %v", err)
	}
}

func TestVerifyDetectsExtraFilePlantedAfterBuild(t *testing.T) {
	out := built(t)
	dir := filepath.Join(out, TreeDir, "skills/fix")
	writable(t, dir, func() error {
		return os.WriteFile(filepath.Join(dir, "solution.py"), []byte("answer"), 0o444)
	})
	wantDiffs(t, drift(t, out), "skills/fix/solution.py: extra file")
}

func TestVerifyDetectsFileRemovedAfterBuild(t *testing.T) {
	out := built(t)
	dir := filepath.Join(out, TreeDir, "commands")
	writable(t, dir, func() error { return os.Remove(filepath.Join(dir, "go.md")) })
	wantDiffs(t, drift(t, out), "commands/go.md: missing (manifest has a file)")
}

func TestVerifyDetectsModeChangeAfterBuild(t *testing.T) {
	out := built(t)
	p := filepath.Join(out, TreeDir, "skills/fix/SKILL.md")
	if err := os.Chmod(p, 0o666|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	wantDiffs(t, drift(t, out), "skills/fix/SKILL.md: mode changed: want 0444, got 4666")
}

func TestVerifyDetectsLinkRetargetedAfterBuild(t *testing.T) {
	out := built(t)
	dir := filepath.Join(out, TreeDir, "skills/fix")
	writable(t, dir, func() error {
		os.Remove(filepath.Join(dir, "alias.md"))
		return os.Symlink("/etc/passwd", filepath.Join(dir, "alias.md"))
	})
	wantDiffs(t, drift(t, out), "skills/fix/alias.md: target changed: want SKILL.md, got /etc/passwd")
}

func TestVerifyDetectsFileSwappedForSymlink(t *testing.T) {
	out := built(t)
	dir := filepath.Join(out, TreeDir, "commands")
	writable(t, dir, func() error {
		os.Remove(filepath.Join(dir, "go.md"))
		return os.Symlink("/etc/shadow", filepath.Join(dir, "go.md"))
	})
	wantDiffs(t, drift(t, out), "commands/go.md: kind changed: want file, got symlink")
}

func TestVerifyDetectsHardLinkPlantedAfterBuild(t *testing.T) {
	out := built(t)
	p := filepath.Join(out, TreeDir, "commands/go.md")
	// Same bytes, same mode: only the link count tells that another name can change it.
	outside := filepath.Join(t.TempDir(), "writable-elsewhere")
	if err := os.Link(p, outside); err != nil {
		t.Fatal(err)
	}
	wantDiffs(t, drift(t, out), "commands/go.md: hard-linked (2 links)")
}

func TestVerifyDetectsFIFOPlantedAfterBuild(t *testing.T) {
	out := built(t)
	dir := filepath.Join(out, TreeDir, "skills")
	writable(t, dir, func() error { return syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o444) })
	wantDiffs(t, drift(t, out), "skills/pipe: extra fifo")
}

func TestVerifyRefusesForgedManifest(t *testing.T) {
	tests := []struct {
		name    string
		forge   func(m *Manifest)
		wantErr string
	}{
		{"entry edited, digest not", func(m *Manifest) { m.Entries[1].SHA256 = strings.Repeat("0", 64) }, "does not match its entries"},
		{"escaping symlink with a fresh digest", func(m *Manifest) {
			for i := range m.Entries {
				if m.Entries[i].Kind == KindSymlink {
					m.Entries[i].Target = "../../../etc/passwd"
				}
			}
			m.TreeSHA256 = Digest(m.Entries)
		}, "leaves its tree"},
		{"absolute symlink with a fresh digest", func(m *Manifest) {
			for i := range m.Entries {
				if m.Entries[i].Kind == KindSymlink {
					m.Entries[i].Target = "/etc/passwd"
				}
			}
			m.TreeSHA256 = Digest(m.Entries)
		}, "absolute symlink"},
		{"unsorted", func(m *Manifest) {
			m.Entries[4], m.Entries[5] = m.Entries[5], m.Entries[4]
			m.TreeSHA256 = Digest(m.Entries)
		}, "path order"},
		{"path leaving the tree", func(m *Manifest) {
			m.Entries = append([]Entry{{Path: "../x", Kind: KindDir, Mode: "0555"}}, m.Entries...)
			m.TreeSHA256 = Digest(m.Entries)
		}, "clean relative path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := built(t)
			p := filepath.Join(out, ManifestFile)
			data, _ := os.ReadFile(p)
			var m Manifest
			json.Unmarshal(data, &m)
			tc.forge(&m)
			writable(t, out, func() error { return os.WriteFile(p, m.encode(), 0o444) })
			_, err := Verify(out)
			var de *DriftError
			if err == nil || errors.As(err, &de) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Verify = %v, want a manifest error with %q", err, tc.wantErr)
			}
		})
	}
}

func TestVerifyRefusesManifestSymlink(t *testing.T) {
	out := built(t)
	real := filepath.Join(t.TempDir(), "m.json")
	data, _ := os.ReadFile(filepath.Join(out, ManifestFile))
	os.WriteFile(real, data, 0o644)
	writable(t, out, func() error {
		os.Remove(filepath.Join(out, ManifestFile))
		return os.Symlink(real, filepath.Join(out, ManifestFile))
	})
	if _, err := Verify(out); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Verify = %v", err)
	}
}

func TestVerifyRefusesTreeSymlink(t *testing.T) {
	out := built(t)
	other := built(t)
	writable(t, out, func() error {
		if err := os.Rename(filepath.Join(out, TreeDir), filepath.Join(out, "old")); err != nil {
			return err
		}
		return os.Symlink(filepath.Join(other, TreeDir), filepath.Join(out, TreeDir))
	})
	if _, err := Verify(out); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Verify = %v", err)
	}
}

func TestCompareReportsBothDirections(t *testing.T) {
	f := func(p, sum string) Entry { return Entry{Path: p, Kind: KindFile, Mode: "0444", Size: 1, SHA256: sum} }
	want := []Entry{f("a", "1"), f("b", "1"), f("d", "1")}
	got := []Entry{f("b", "2"), f("c", "1"), f("d", "1")}
	wantDiffs(t, compare(want, got), "a: missing", "b: content changed", "c: extra file")
	if d := compare(want, want); len(d) != 0 {
		t.Errorf("compare(x, x) = %v", d)
	}
}
