package embedbin

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// testBin stands for an embedded binary: the package treats its content as opaque bytes.
var testBin = New("ceval-test", bytes.Repeat([]byte("ceval-embedded-binary\n"), 10_000))

// install runs Install and checks everything it promises about the result.
func install(t *testing.T, dir string) (string, *syscall.Stat_t) {
	t.Helper()
	path, err := testBin.Install(dir)
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	if want := filepath.Join(dir, testBin.FileName()); path != want {
		t.Fatalf("Install returned %s, want %s", path, want)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o555 || st.Uid != uint32(os.Geteuid()) {
		t.Errorf("installed %s: mode %v uid %d, want regular 0555 owned by %d", path, fi.Mode(), st.Uid, os.Geteuid())
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, testBin.Bytes()) {
		t.Errorf("installed content differs from testBin.Bytes() (err %v)", err)
	}
	return path, st
}

func TestInstallCreatesDirAndIsIdempotent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	_, first := install(t, dir)
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("dir mode %v (err %v), want 0755", fi.Mode(), err)
	}
	_, second := install(t, dir)
	if first.Ino != second.Ino || first.Mtim != second.Mtim {
		t.Errorf("second Install rewrote an identical file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("dir holds %d entries, want just the init", len(entries))
	}
}

func TestInstallReplacesTamperedFile(t *testing.T) {
	dir := t.TempDir()
	path, _ := install(t, dir)
	tampered := bytes.Clone(testBin.Bytes())
	tampered[len(tampered)/2] ^= 0xff
	os.Chmod(path, 0o755)
	if err := os.WriteFile(path, tampered, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o555)
	install(t, dir)
}

func TestInstallDoesNotFollowSymlinkPlantedAtTarget(t *testing.T) {
	for _, tt := range []struct {
		name    string
		content []byte
	}{
		{"to a file with other content", []byte("victim\n")},
		// Even the right bytes behind a link are refused: the link could be repointed later.
		{"to an identical copy", testBin.Bytes()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, outside := t.TempDir(), t.TempDir()
			victim := filepath.Join(outside, "victim")
			if err := os.WriteFile(victim, tt.content, 0o555); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, filepath.Join(dir, testBin.FileName())); err != nil {
				t.Fatal(err)
			}
			install(t, dir)
			if got, _ := os.ReadFile(victim); !bytes.Equal(got, tt.content) {
				t.Errorf("Install wrote through the planted symlink")
			}
		})
	}
}

func TestInstallReplacesFileOthersCouldModify(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, path string)
	}{
		{"group and world writable", func(t *testing.T, path string) {
			os.Chmod(path, 0o777)
		}},
		{"hard linked elsewhere", func(t *testing.T, path string) {
			if err := os.Link(path, filepath.Join(t.TempDir(), "other-name")); err != nil {
				t.Skipf("hard link: %v", err)
			}
		}},
		{"owned by another user", func(t *testing.T, path string) {
			if os.Geteuid() != 0 {
				t.Skip("chown needs root")
			}
			if err := os.Lchown(path, 2000, 2000); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, before := install(t, dir)
			tt.plant(t, path)
			_, after := install(t, dir)
			if after.Ino == before.Ino {
				t.Errorf("kept the file that was %s", tt.name)
			}
		})
	}
}

func TestInstallFailsWhenTargetIsADirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, testBin.FileName()), 0o755); err != nil {
		t.Fatal(err)
	}
	if path, err := testBin.Install(dir); err == nil {
		t.Fatalf("Install succeeded with a directory at %s", path)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left %d entries behind, want only the directory", len(entries))
	}
}

func TestConcurrentInstallsAllSucceed(t *testing.T) {
	dir := t.TempDir()
	// Start from a tampered file so that every caller races to replace it.
	if err := os.WriteFile(filepath.Join(dir, testBin.FileName()), []byte("x"), 0o555); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			if _, err := testBin.Install(dir); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	install(t, dir)
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("dir holds %d entries, want just the init (temporary files left behind?)", len(entries))
	}
}

func TestCheckStaticRefusesNonELF(t *testing.T) {
	if err := CheckStatic([]byte("#!/bin/sh\n")); err == nil {
		t.Fatal("a script passed as a static binary")
	}
	if self, err := os.ReadFile("/proc/self/exe"); err == nil && CheckStatic(self) == nil {
		t.Log("the test binary itself is static (fine: built with CGO_ENABLED=0)")
	}
}

func TestCheckRefusesPlaceholdersAndDynamicBinaries(t *testing.T) {
	if err := New("tiny", []byte("#!/bin/sh\n")).Check(); err == nil || !strings.Contains(err.Error(), "not a built binary") {
		t.Errorf("a placeholder: %v", err)
	}
	ls, err := os.ReadFile("/bin/ls")
	if err != nil {
		t.Skip(err)
	}
	if err := New("ls", ls).Check(); err == nil || !strings.Contains(err.Error(), "embedded ls") {
		t.Errorf("a dynamically linked /bin/ls: %v", err)
	}
}

// The installed copy is compared a chunk at a time: a change in the last, partial chunk
// (or the first byte) must be caught as surely as one in the middle.
func TestInstallReplacesFileTamperedAtEitherEnd(t *testing.T) {
	for _, at := range []int{0, len(testBin.Bytes()) - 1} {
		dir := t.TempDir()
		path, _ := install(t, dir)
		tampered := bytes.Clone(testBin.Bytes())
		tampered[at] ^= 0xff
		os.Chmod(path, 0o755)
		if err := os.WriteFile(path, tampered, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, 0o555)
		if testBin.installed(path) {
			t.Errorf("a file differing at byte %d passed as installed", at)
		}
		install(t, dir)
	}
}
