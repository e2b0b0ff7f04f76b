package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/oci"

	"ceval.dev/ceval/sandbox"
)

// testIDRange is a range of this test process's own (0xD0000000..0xDFFFFFFF by PID), apart
// from the default range real runs of any test take slots of and from package launcher's
// test namespaces (0xC0000000..).
func testIDRange() sandbox.IDRange {
	return sandbox.IDRange{Start: 0xD0000000 + uint32(os.Getpid()%1000)*4*oci.IDRangeSize, Slots: 4}
}

func TestTwoLiveRunsNeverShareAnIDSlot(t *testing.T) {
	dir, r := t.TempDir(), testIDRange()
	a, err := AllocateIDs(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := AllocateIDs(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.HostID == b.HostID {
		t.Fatalf("both runs got host IDs from %d", a.HostID)
	}
	if a.HostID != r.Start || b.HostID != r.Start+oci.IDRangeSize {
		t.Errorf("slots %d and %d, want %d and the next", a.HostID, b.HostID, r.Start)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	c, err := AllocateIDs(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.HostID != a.HostID {
		t.Errorf("a released slot was not reused: got %d, want %d", c.HostID, a.HostID)
	}
	b.Release()
	c.Release()
}

func TestAllIDSlotsInUseIsAnErrorNamingTheFix(t *testing.T) {
	dir, r := t.TempDir(), testIDRange()
	r.Slots = 1
	a, err := AllocateIDs(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	if _, err := AllocateIDs(r, dir); err == nil || !strings.Contains(err.Error(), "id_range.slots") {
		t.Fatalf("got %v, want an error naming id_range.slots", err)
	}
}

// A ceval killed with -9 leaves its lock file, but the kernel drops its flock: the slot is
// free for the next run and for gc. Another open file description stands in for the dead
// process's lock.
func TestIDSlotOfADeadCevalIsFreedAndGCRemovesItsFile(t *testing.T) {
	dir, r := t.TempDir(), testIDRange()
	holder, err := os.OpenFile(slotPath(dir, r.Start), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(holder.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	s, err := AllocateIDs(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.HostID == r.Start {
		t.Fatal("a slot a live holder locks was handed out")
	}
	removed, kept, err := gcIDSlots(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 0 || len(kept) != 2 {
		t.Fatalf("gc with two live holders removed %v, kept %v", removed, kept)
	}
	holder.Close() // the holder dies
	removed, kept, err = gcIDSlots(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || !strings.Contains(removed[0].ID, "ids "+slotName(r.Start)) || len(kept) != 1 {
		t.Fatalf("gc after the holder died removed %v, kept %v", removed, kept)
	}
	if _, err := os.Stat(slotPath(dir, r.Start)); !os.IsNotExist(err) {
		t.Errorf("the dead holder's lock file is still there: %v", err)
	}
	again, err := AllocateIDs(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Release()
	if again.HostID != r.Start {
		t.Errorf("got slot %d, want the freed %d", again.HostID, r.Start)
	}
	s.Release()
}

// A container a crashed ceval left running still runs as its slot's IDs; handing the slot
// to a new run would make the two share their per-UID quotas again.
func TestIDSlotWhoseIDsAProcessStillRunsAsIsSkipped(t *testing.T) {
	dir, r := t.TempDir(), testIDRange()
	orphan := exec.Command("/bin/cat")
	orphan.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: r.Start + 2000, Gid: r.Start + 2000, Groups: []uint32{}}}
	in, err := orphan.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	s, err := AllocateIDs(r, dir)
	in.Close()
	orphan.Wait()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if s.HostID == r.Start {
		t.Fatalf("slot %d handed out while a process runs as %d", s.HostID, r.Start+2000)
	}
}

func slotName(host uint32) string {
	return strings.TrimSuffix(filepath.Base(slotPath("", host)), ".lock")
}
