package launcher

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/tempdir"
)

// A ceval killed after mounting a verifier's root overlay and before creating its container
// leaves mounts that no container names: SweepRootOverlays finds them by the dead owner's
// tag in the directory's name, and leaves a live ceval's overlay and an untagged one alone.
func TestSweepRootOverlaysOfAGoneCevalOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: mounting a tmpfs needs root")
		}
		t.Skip("mounting a tmpfs needs root")
	}
	base := t.TempDir()
	// A gone ceval: a child that ran and was reaped, its PID in the owner tag.
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	goneTag := "p" + strconv.Itoa(child.Process.Pid) + "s1"
	mk := func(name string) string {
		dir := filepath.Join(base, name)
		rw := filepath.Join(dir, "root", "rw")
		if err := os.MkdirAll(rw, 0o700); err != nil {
			t.Fatal(err)
		}
		unmount, err := MountScratch(rw, 1, 64, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unmount() })
		return dir
	}
	gone := mk(RootOverlayPrefix + goneTag + "-1")
	live := mk(RootOverlayPrefix + tempdir.Owner() + "-2")
	untagged := mk(RootOverlayPrefix + "3")
	removed, err := SweepRootOverlays(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || !strings.HasPrefix(removed[0].ID, gone) {
		t.Errorf("swept %v, want the gone ceval's overlay %s only", removed, gone)
	}
	if _, err := os.Lstat(gone); !os.IsNotExist(err) {
		t.Errorf("the gone ceval's overlay directory is still there (%v)", err)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), " "+gone+"/") {
		t.Errorf("the gone ceval's overlay is still mounted")
	}
	for _, d := range []string{live, untagged} {
		if !strings.Contains(string(mounts), " "+d+"/root/rw ") {
			t.Errorf("%s was unmounted: a live ceval's overlay, or one without an owner tag, is not gc's", d)
		}
	}
	if r, err := SweepRootOverlays(filepath.Join(base, "missing")); err != nil || r != nil {
		t.Errorf("a base that does not exist: %v, %v; want nothing and no error", r, err)
	}
}
