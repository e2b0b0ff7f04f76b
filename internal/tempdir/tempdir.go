// Package tempdir makes ceval's temporary directories and removes them on every path: a
// function's deferred Remove on success and error, RemoveLive when a second signal makes
// ceval exit without running its deferred calls, and Sweep (ceval gc) for those of a ceval
// that was killed (SIGKILL, a crash), told by the owner its name carries.
//
// Removal never descends into something mounted below the directory (a scratch
// filesystem, a bind of the host's /dev): it refuses, saying what to unmount. A directory
// without write permission (a read-only copy of a plugin tree in a run directory) is made
// writable first, which its owner may do: without that, os.RemoveAll fails on it for
// anyone but root.
package tempdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

var (
	mu   sync.Mutex
	live = map[string]bool{}
)

// owner names this process in its directories: its PID and start time (clock ticks since
// boot), so that a later process with the same PID is not taken for it.
var owner = sync.OnceValue(func() string {
	start, _ := startTime(os.Getpid())
	return fmt.Sprintf("p%ds%s", os.Getpid(), start)
})

// named is a directory Make made: PREFIX p<PID>s<START> - RANDOM.
var named = regexp.MustCompile(`^ceval-.*-p([0-9]+)s([0-9]+)-[0-9]+$`)

// Make creates a new directory in dir ("" = os.TempDir()) named prefix, this process's
// owner tag and a random suffix (mode 0700, as os.MkdirTemp), and registers it for
// RemoveLive until Remove removes it.
func Make(dir, prefix string) (string, error) {
	d, err := os.MkdirTemp(dir, prefix+owner()+"-")
	if err != nil {
		return "", err
	}
	mu.Lock()
	live[d] = true
	mu.Unlock()
	return d, nil
}

// Remove removes a directory Make made (see RemoveTree); it is no longer registered
// whether or not that succeeded, since what is left then is mounted.
func Remove(dir string) error {
	mu.Lock()
	delete(live, dir)
	mu.Unlock()
	return RemoveTree(dir)
}

// keptMark, in a directory Make made, says its ceval kept it on purpose: Sweep leaves it.
const keptMark = ".ceval-kept"

// Keep leaves a directory Make made for the user (a failed selftest's run directories,
// printed as evidence): no longer registered, and never swept.
func Keep(dir string) error {
	mu.Lock()
	delete(live, dir)
	mu.Unlock()
	return os.WriteFile(filepath.Join(dir, keptMark), nil, 0o600)
}

// RemoveTree removes dir and everything below it, making directories without write
// permission writable first. It refuses, removing nothing, when something is mounted at
// or below dir: RemoveAll would delete what the mount shows (the host's /dev, a user's
// directory bound there).
func RemoveTree(dir string) error {
	if m := mountedBelow(dir); m != "" {
		return fmt.Errorf("%s is still mounted: %s kept (unmount it, then remove %s, or run ceval gc)", m, dir, dir)
	}
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		// Called for a directory before it is read: read and write it then.
		if err == nil && d.IsDir() {
			if fi, ierr := d.Info(); ierr == nil && fi.Mode().Perm()&0o700 != 0o700 {
				_ = os.Chmod(p, fi.Mode().Perm()|0o700)
			}
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return nil
}

// RemoveLive removes every directory Make made that no Remove removed yet: for a process
// about to exit without running its deferred calls (a second SIGINT or SIGTERM). What
// holds a mount is kept, and said in the errors returned.
func RemoveLive() []error {
	mu.Lock()
	dirs := make([]string, 0, len(live))
	for d := range live {
		dirs = append(dirs, d)
	}
	live = map[string]bool{}
	mu.Unlock()
	sort.Sort(sort.Reverse(sort.StringSlice(dirs))) // a nested one before its parent
	var errs []error
	for _, d := range dirs {
		if err := RemoveTree(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Live lists the directories Make made that are not removed yet.
func Live() []string {
	mu.Lock()
	defer mu.Unlock()
	out := make([]string, 0, len(live))
	for d := range live {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// Owner is this process's owner tag (p<PID>s<START>), for a directory ceval names itself
// outside TMPDIR (a verifier's root overlay under /run/ceval/roots): OwnerGone reads it back.
func Owner() string { return owner() }

// OwnerGone says whether name (a base name) carries an owner tag, Make's or Owner's, and
// whether that process is gone (no process has its PID and start time); pid is its PID.
func OwnerGone(name string) (pid int, tagged, gone bool) {
	m := named.FindStringSubmatch(name)
	if m == nil {
		return 0, false, false
	}
	pid, _ = strconv.Atoi(m[1])
	start, ok := startTime(pid)
	return pid, true, !ok || start != m[2]
}

// Swept is one directory Sweep looked at.
type Swept struct {
	Path string
	Why  string
}

// Sweep removes, from dir ("" = os.TempDir()), the directories Make named for a process
// that is gone (no process has that PID and start time), owned by this user, detaching
// first what is mounted below them (its scratch filesystems); those of a live ceval are kept.
func Sweep(dir string) (removed, kept []Swept, err error) {
	if dir == "" {
		dir = os.TempDir()
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("gc: %w", err)
	}
	var errs []error
	for _, e := range ents {
		m := named.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
			continue // another user's: never ours to remove
		}
		if _, err := os.Lstat(filepath.Join(p, keptMark)); err == nil {
			kept = append(kept, Swept{p, "kept on purpose by its ceval (a failed selftest's evidence): remove it yourself"})
			continue
		}
		pid, _, gone := OwnerGone(e.Name())
		if !gone {
			kept = append(kept, Swept{p, fmt.Sprintf("its ceval, pid %d, runs", pid)})
			continue
		}
		// What is mounted below is its ceval's (a verifier's scratch filesystems, a ceval
		// killed before their container existed): detached first, so that the removal
		// never reaches through a mount.
		n, err := detachBelow(p)
		if err == nil {
			err = RemoveTree(p)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("gc: %w", err))
			continue
		}
		why := fmt.Sprintf("its ceval, pid %d, is gone", pid)
		if n > 0 {
			why += fmt.Sprintf("; %d mount(s) below it detached", n)
		}
		removed = append(removed, Swept{p, why})
	}
	return removed, kept, errors.Join(errs...)
}

// startTime is field 22 of /proc/PID/stat: the process's start, in clock ticks since boot.
func startTime(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return "", false
	}
	f := strings.Fields(s[end+1:]) // f[0] state ... f[19] starttime
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return "", false
	}
	return f[19], true
}

// mountedBelow returns a mount point at or below dir, or "".
func mountedBelow(dir string) string {
	if m := mountsBelow(dir); len(m) > 0 {
		return m[0]
	}
	return ""
}

// detachBelow detaches (MNT_DETACH) every mount at or below dir, deepest first, and says
// how many.
func detachBelow(dir string) (int, error) {
	points := mountsBelow(dir)
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			return 0, fmt.Errorf("unmount %s: %w", p, err)
		}
	}
	return len(points), nil
}

// mountsBelow returns the mount points at or below dir.
func mountsBelow(dir string) []string {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	var out []string
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		if len(f) <= 4 {
			continue
		}
		mp := unescape(f[4])
		if mp == abs || strings.HasPrefix(mp, abs+"/") {
			out = append(out, mp)
		}
	}
	return out
}

// unescape undoes mountinfo's octal escapes (\040 for a space, ...).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
