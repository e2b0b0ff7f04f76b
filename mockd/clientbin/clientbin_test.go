package clientbin

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

func TestEmbeddedBytesMatchSHA256(t *testing.T) {
	sum := sha256.Sum256(Bytes())
	if got := hex.EncodeToString(sum[:]); got != SHA256() {
		t.Fatalf("sha256 of Bytes() = %s, SHA256() = %s", got, SHA256())
	}
	if len(Bytes()) < 100_000 {
		t.Fatalf("embedded client is %d bytes: not a built binary", len(Bytes()))
	}
}

// Images may have no libc and no dynamic loader: the client must be a static linux/amd64 ELF.
func TestEmbeddedClientIsStatic(t *testing.T) {
	f, err := elf.NewFile(bytes.NewReader(Bytes()))
	if err != nil {
		t.Fatalf("embedded client is not ELF: %v", err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC {
		t.Errorf("machine %v type %v, want EM_X86_64 ET_EXEC", f.Machine, f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("program header %v: the client is dynamically linked", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) != 0 {
		t.Errorf("imports shared libraries %v", libs)
	}
}

// install runs Install and checks everything it promises about the result.
func install(t *testing.T, dir string) (string, *syscall.Stat_t) {
	t.Helper()
	path, err := Install(dir)
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	if want := filepath.Join(dir, "ceval-mock-"+SHA256()[:12]); path != want {
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
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, Bytes()) {
		t.Errorf("installed content differs from Bytes() (err %v)", err)
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
		t.Errorf("dir holds %d entries, want just the client", len(entries))
	}
}

func TestInstallReplacesTamperedFile(t *testing.T) {
	dir := t.TempDir()
	path, _ := install(t, dir)
	tampered := bytes.Clone(Bytes())
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
		{"to an identical copy", Bytes()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, outside := t.TempDir(), t.TempDir()
			victim := filepath.Join(outside, "victim")
			if err := os.WriteFile(victim, tt.content, 0o555); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, filepath.Join(dir, "ceval-mock-"+SHA256()[:12])); err != nil {
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
	if err := os.Mkdir(filepath.Join(dir, "ceval-mock-"+SHA256()[:12]), 0o755); err != nil {
		t.Fatal(err)
	}
	if path, err := Install(dir); err == nil {
		t.Fatalf("Install succeeded with a directory at %s", path)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left %d entries behind, want only the directory", len(entries))
	}
}

func TestConcurrentInstallsAllSucceed(t *testing.T) {
	dir := t.TempDir()
	// Start from a tampered file so that every caller races to replace it.
	if err := os.WriteFile(filepath.Join(dir, "ceval-mock-"+SHA256()[:12]), []byte("x"), 0o555); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			if _, err := Install(dir); err != nil {
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
		t.Errorf("dir holds %d entries, want just the client (temporary files left behind?)", len(entries))
	}
}
