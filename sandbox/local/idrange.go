package local

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/sandbox"
)

// IDLockDir holds one lock file per slot in use; a live ceval holds it with flock, so the
// kernel frees a slot whose holder died. /run is emptied at boot, as a reboot frees all.
var IDLockDir = "/run/ceval/idslots"

// IDSlot is one run's block of host IDs, held until Release.
type IDSlot struct {
	HostID uint32 // the host ID of container ID 0
	lock   *os.File
	path   string
}

// AllocateIDs takes a free slot of r: one whose lock file in dir no live process holds and
// whose IDs no process on the host runs as (a container a crashed ceval left running keeps
// its slot until `ceval gc` removes it). Release frees it; so does the holder's death.
func AllocateIDs(r sandbox.IDRange, dir string) (*IDSlot, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	return allocateSlot(r, dir)
}

// allocateSlot is AllocateIDs without the host account check: inside a rootless daemon's
// user namespace the host's account files do not number the range's IDs.
func allocateSlot(r sandbox.IDRange, dir string) (*IDSlot, error) {
	if r.Slots == 0 {
		return nil, errors.New("id slots: no slot in the range")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("id slots: %w", err)
	}
	var inUse map[uint32]bool
	for i := uint32(0); i < r.Slots; i++ {
		host := r.Start + i*oci.IDRangeSize
		s, err := lockSlot(dir, host)
		if err != nil {
			return nil, err
		}
		if s == nil {
			continue
		}
		if inUse == nil {
			if inUse, err = HostIDsInUse(r.SlotOf); err != nil {
				s.Release()
				return nil, err
			}
		}
		if inUse[host] {
			s.Release()
			continue
		}
		return s, nil
	}
	return nil, fmt.Errorf("id slots: all %d slots of id_range (from %d) are in use: wait for runs to end, run `ceval gc` after a crash, or raise id_range.slots in ceval's config", r.Slots, r.Start)
}

func slotPath(dir string, host uint32) string {
	return filepath.Join(dir, strconv.FormatUint(uint64(host), 10)+".lock")
}

// lockSlot takes the slot's lock without waiting; nil when another process holds it. The
// file it locked must still be the one at its path: a holder removes its file on Release,
// and a lock on a removed file would hold nothing.
func lockSlot(dir string, host uint32) (*IDSlot, error) {
	p := slotPath(dir, host)
	for {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("id slot %s: %w", p, err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, nil
			}
			return nil, fmt.Errorf("id slot %s: lock: %w", p, err)
		}
		var held, now unix.Stat_t
		if unix.Fstat(int(f.Fd()), &held) == nil && unix.Stat(p, &now) == nil && held.Ino == now.Ino && held.Dev == now.Dev {
			_ = f.Truncate(0)
			_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
			return &IDSlot{HostID: host, lock: f, path: p}, nil
		}
		f.Close() // removed or replaced meanwhile: try the file that is there now
	}
}

// Release removes the slot's lock file and unlocks it. Idempotent.
func (s *IDSlot) Release() error {
	if s == nil || s.lock == nil {
		return nil
	}
	err := os.Remove(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	s.lock.Close()
	s.lock = nil
	return err
}

// HostIDsInUse returns the slots (by their first host ID, as sandbox.IDRange.SlotOf names them) that a
// process on the host runs as, by any of its UIDs or GIDs.
func HostIDsInUse(slotOf func(uint64) (uint32, bool)) (map[uint32]bool, error) {
	out := map[uint32]bool{}
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("id slots: %w", err)
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "status"))
		if err != nil {
			continue // gone meanwhile
		}
		for _, line := range strings.Split(string(data), "\n") {
			k, v, _ := strings.Cut(line, ":")
			if k != "Uid" && k != "Gid" {
				continue
			}
			for _, f := range strings.Fields(v) {
				id, err := strconv.ParseUint(f, 10, 32)
				if err != nil {
					continue
				}
				if slot, ok := slotOf(id); ok {
					out[slot] = true
				}
			}
		}
	}
	return out, nil
}

// gcIDSlots removes the lock files of slots no live process holds (their ceval died); a
// slot whose IDs a process still runs as keeps its file and is listed as kept.
func gcIDSlots(dir string) (removed, kept []launcher.Swept, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("gc: id slots: %w", err)
	}
	slots := map[uint64]bool{}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".lock")
		if host, err := strconv.ParseUint(name, 10, 32); ok && err == nil {
			slots[host] = true
		}
	}
	slotOf := func(id uint64) (uint32, bool) {
		for s := range slots {
			if id >= s && id < s+oci.IDRangeSize {
				return uint32(s), true
			}
		}
		return 0, false
	}
	// The slots of cevals that are gone: locked here (a live ceval holds its own).
	var errs []error
	gone := map[uint64]*IDSlot{}
	for _, host := range slices.Sorted(maps.Keys(slots)) {
		s, err := lockSlot(dir, uint32(host))
		switch {
		case err != nil:
			errs = append(errs, err)
		case s == nil:
			kept = append(kept, launcher.Swept{Kind: "id-slot", ID: sweptSlotID(host), Why: "a live ceval holds it"})
		default:
			gone[host] = s
		}
	}
	// A process of a container gc has just deleted may still be on its way out (the init of
	// a task created and never started, a run prepared ahead): wait a little for it.
	var inUse map[uint32]bool
	for deadline := time.Now().Add(slotDrain); ; time.Sleep(50 * time.Millisecond) {
		if inUse, err = HostIDsInUse(slotOf); err != nil {
			for _, s := range gone {
				s.lock.Close()
			}
			return removed, kept, errors.Join(append(errs, err)...)
		}
		busy := false
		for host := range gone {
			busy = busy || inUse[uint32(host)]
		}
		if !busy || time.Now().After(deadline) {
			break
		}
	}
	for _, host := range slices.Sorted(maps.Keys(gone)) {
		s := gone[host]
		if inUse[uint32(host)] {
			s.lock.Close() // keep the file: a process still runs as these IDs
			kept = append(kept, launcher.Swept{Kind: "id-slot", ID: sweptSlotID(host), Why: "a process still runs as its IDs"})
			continue
		}
		if err := s.Release(); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, launcher.Swept{Kind: "id-slot", ID: sweptSlotID(host), Why: "its ceval is gone"})
	}
	return removed, kept, errors.Join(errs...)
}

// slotDrain bounds gc's wait for the last processes of a slot whose ceval is gone.
const slotDrain = 3 * time.Second

// sweptSlotID is how gc names the slot starting at host.
func sweptSlotID(host uint64) string {
	return "ids " + strconv.FormatUint(host, 10) + ".." + strconv.FormatUint(host+oci.IDRangeSize-1, 10)
}

// CheckUserNamespaces tries what a run does with its user namespace, for a host check: the
// kernel allows user namespaces, the host tools are there, r is usable, a slot of it is
// free, and a namespace owned by that slot's first ID maps it. It returns what it verified.
func CheckUserNamespaces(r sandbox.IDRange) (string, error) {
	if r == (sandbox.IDRange{}) {
		r = sandbox.DefaultIDRange
	}
	data, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
	if err != nil {
		return "", fmt.Errorf("user namespaces: %w (a kernel built with CONFIG_USER_NS is needed)", err)
	}
	if strings.TrimSpace(string(data)) == "0" {
		return "", errors.New("user namespaces are disabled: sysctl user.max_user_namespaces=15000")
	}
	for _, tool := range launcher.HostTools() {
		if _, err := os.Stat(tool); err != nil {
			return "", fmt.Errorf("user namespaces: %s: %w (apt-get install util-linux)", tool, err)
		}
	}
	slot, err := AllocateIDs(r, IDLockDir)
	if err != nil {
		return "", err
	}
	defer slot.Release()
	ns, err := launcher.NewUserNS(slot.HostID, oci.IDRangeSize)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("per-run ranges of %d IDs from %d (%d slots); made one owned by %d", oci.IDRangeSize, r.Start, r.Slots, slot.HostID), ns.Close()
}
