package supervisor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
)

// IDRange is the subordinate ID range runs take their user namespaces' host IDs from: Slots
// blocks of oci.IDRangeSize UIDs (and the same GIDs) from Start, one block per live run.
// It comes from ceval's user config (id_range), never from a task.
type IDRange struct {
	Start uint32 `yaml:"start"`
	Slots uint32 `yaml:"slots"`
}

// DefaultIDRange starts at 2^31 and holds 1024 runs (2^31 .. 2^31+2^26-1). Nothing hands
// out IDs there: useradd stops at UID_MAX 60000 and its sub-IDs at SUB_UID_MAX 600100000,
// systemd's container and dynamic ranges end below 2^31, and 2^32-1 is not an ID. ceval
// still refuses it when /etc/passwd, /etc/group, /etc/subuid or /etc/subgid name an ID in it.
var DefaultIDRange = IDRange{Start: 1 << 31, Slots: 1024}

// IDLockDir holds one lock file per slot in use; a live ceval holds it with flock, so the
// kernel frees a slot whose holder died. /run is emptied at boot, as a reboot frees all.
var IDLockDir = "/run/ceval/idslots"

// Check returns an error naming the fix when r is unusable: empty, past 2^32-1, reaching
// ID 0, or overlapping an ID the host's account files name.
func (r IDRange) Check() error {
	if r.Slots == 0 {
		return errors.New("id_range: slots is 0: give how many runs may run at once")
	}
	end := uint64(r.Start) + uint64(r.Slots)*oci.IDRangeSize
	if r.Start < oci.IDRangeSize || end > 1<<32-1 {
		return fmt.Errorf("id_range: %d slots of %d IDs from %d end at %d; keep the range within %d..%d", r.Slots, oci.IDRangeSize, r.Start, end-1, oci.IDRangeSize, uint64(1<<32-2))
	}
	for _, f := range hostIDFiles {
		lo, hi, who, err := firstOverlap(f, uint64(r.Start), end)
		if err != nil {
			return fmt.Errorf("id_range: %w", err)
		}
		if who != "" {
			return fmt.Errorf("id_range %d..%d overlaps %s's %d..%d in %s: move id_range.start (ceval's config) past every account's IDs", r.Start, end-1, who, lo, hi, f.path)
		}
	}
	return nil
}

// hostIDFile is an account file and how to read IDs from its lines.
type hostIDFile struct {
	path  string
	field int  // the ID's field (0-based, ':'-separated)
	sub   bool // a subordinate range: the ID field is followed by a count
}

var hostIDFiles = []hostIDFile{
	{"/etc/passwd", 2, false},
	{"/etc/group", 2, false},
	{"/etc/subuid", 1, true},
	{"/etc/subgid", 1, true},
}

// firstOverlap returns the first entry of f whose IDs meet [start, end); a missing file has
// none.
func firstOverlap(f hostIDFile, start, end uint64) (lo, hi uint64, who string, err error) {
	file, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, "", nil
	}
	if err != nil {
		return 0, 0, "", err
	}
	defer file.Close()
	return overlapIn(file, f, start, end)
}

func overlapIn(r io.Reader, f hostIDFile, start, end uint64) (lo, hi uint64, who string, err error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, ":")
		if len(parts) <= f.field+btoi(f.sub) {
			continue
		}
		id, err := strconv.ParseUint(parts[f.field], 10, 32)
		if err != nil {
			continue
		}
		n := uint64(1)
		if f.sub {
			if n, err = strconv.ParseUint(parts[f.field+1], 10, 32); err != nil || n == 0 {
				continue
			}
		}
		if id < end && id+n > start {
			return id, id + n - 1, parts[0], nil
		}
	}
	return 0, 0, "", sc.Err()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// IDSlot is one run's block of host IDs, held until Release.
type IDSlot struct {
	HostID uint32 // the host ID of container ID 0
	lock   *os.File
	path   string
}

// AllocateIDs takes a free slot of r: one whose lock file in dir no live process holds and
// whose IDs no process on the host runs as (a container a crashed ceval left running keeps
// its slot until `ceval gc` removes it). Release frees it; so does the holder's death.
func AllocateIDs(r IDRange, dir string) (*IDSlot, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	return allocateSlot(r, dir)
}

// allocateSlot is AllocateIDs without the host account check: inside a rootless daemon's
// user namespace the host's account files do not number the range's IDs.
func allocateSlot(r IDRange, dir string) (*IDSlot, error) {
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
			if inUse, err = hostIDsInUse(r.slotOf); err != nil {
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

// slotOf returns the first host ID of the slot of r that holds id.
func (r IDRange) slotOf(id uint64) (uint32, bool) {
	end := uint64(r.Start) + uint64(r.Slots)*oci.IDRangeSize
	if id < uint64(r.Start) || id >= end {
		return 0, false
	}
	return r.Start + uint32((id-uint64(r.Start))/oci.IDRangeSize)*oci.IDRangeSize, true
}

// hostIDsInUse returns the slots (by their first host ID, as slotOf names them) that a
// process on the host runs as, by any of its UIDs or GIDs.
func hostIDsInUse(slotOf func(uint64) (uint32, bool)) (map[uint32]bool, error) {
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
	inUse, err := hostIDsInUse(func(id uint64) (uint32, bool) {
		for s := range slots {
			if id >= s && id < s+oci.IDRangeSize {
				return uint32(s), true
			}
		}
		return 0, false
	})
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	for _, host := range slices.Sorted(maps.Keys(slots)) {
		name := strconv.FormatUint(host, 10)
		s, err := lockSlot(dir, uint32(host))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		id := "ids " + name + ".." + strconv.FormatUint(host+oci.IDRangeSize-1, 10)
		if s == nil {
			kept = append(kept, launcher.Swept{Kind: "id-slot", ID: id, Why: "a live ceval holds it"})
			continue
		}
		if inUse[uint32(host)] {
			s.lock.Close() // keep the file: a process still runs as these IDs
			kept = append(kept, launcher.Swept{Kind: "id-slot", ID: id, Why: "a process still runs as its IDs"})
			continue
		}
		if err := s.Release(); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, launcher.Swept{Kind: "id-slot", ID: id, Why: "its ceval is gone"})
	}
	return removed, kept, errors.Join(errs...)
}

// CheckUserNamespaces tries what a run does with its user namespace, for a host check: the
// kernel allows user namespaces, the host tools are there, r is usable, a slot of it is
// free, and a namespace owned by that slot's first ID maps it. It returns what it verified.
func CheckUserNamespaces(r IDRange) (string, error) {
	if r == (IDRange{}) {
		r = DefaultIDRange
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
