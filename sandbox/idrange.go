package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

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

// SlotOf returns the first host ID of the slot of r that holds id.
func (r IDRange) SlotOf(id uint64) (uint32, bool) {
	end := uint64(r.Start) + uint64(r.Slots)*oci.IDRangeSize
	if id < uint64(r.Start) || id >= end {
		return 0, false
	}
	return r.Start + uint32((id-uint64(r.Start))/oci.IDRangeSize)*oci.IDRangeSize, true
}
