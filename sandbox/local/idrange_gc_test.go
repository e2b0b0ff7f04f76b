package local

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A process of a slot whose ceval is gone that is on its way out when gc looks (the init of
// a task gc has just deleted: a run prepared ahead, created and never started) does not keep
// the slot: gc waits a little for it, then removes the lock file. One that stays keeps it.
func TestGCWaitsForTheLastProcessOfASlotWhoseCevalIsGone(t *testing.T) {
	dir, r := t.TempDir(), testIDRange()
	if err := os.WriteFile(slotPath(dir, r.Start), nil, 0o600); err != nil { // its ceval died holding it
		t.Fatal(err)
	}
	run := func(d time.Duration) *exec.Cmd {
		c := exec.Command("/bin/sleep", d.String())
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: r.Start + 2000, Gid: r.Start + 2000, Groups: []uint32{}}}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	dying := run(300 * time.Millisecond)
	go dying.Wait()
	removed, kept, err := gcIDSlots(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || len(kept) != 0 {
		t.Fatalf("gc with the slot's last process exiting: removed %v, kept %v", removed, kept)
	}
	if err := os.WriteFile(slotPath(dir, r.Start), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	staying := run(time.Minute)
	defer func() { staying.Process.Kill(); staying.Wait() }()
	start := time.Now()
	removed, kept, err = gcIDSlots(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 0 || len(kept) != 1 || kept[0].Why != "a process still runs as its IDs" {
		t.Fatalf("gc with a process staying: removed %v, kept %v", removed, kept)
	}
	if d := time.Since(start); d > slotDrain+2*time.Second {
		t.Errorf("gc waited %v for a process that stays", d)
	}
}
