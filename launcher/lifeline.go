package launcher

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Lifeline is a FIFO whose only writer is this process. The container's init watches it
// (oci.Config.SupervisorFIFO) and kills every process in the container when its read sees
// EOF, which the kernel delivers as soon as this process dies, kill -9 included: the agent
// never outlives its supervisor. The FIFO is mode 0444 so no one but root (not the agent's
// UID, which has no capabilities) can open another write end and fake liveness.
type Lifeline struct {
	path string

	mu sync.Mutex
	f  *os.File // read-write: opening it never blocks, and it is a writer
}

// NewLifeline makes the FIFO at path (replacing a leftover one of an earlier attempt) and
// holds it open for writing, close-on-exec, so no child of this process inherits it.
// Close releases it.
func NewLifeline(path string) (*Lifeline, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("lifeline %s: remove leftover: %w", path, err)
	}
	// Owner-only while it is opened: a rootless ceval owns the FIFO without CAP_DAC_OVERRIDE.
	if err := unix.Mkfifo(path, 0o600); err != nil {
		return nil, fmt.Errorf("lifeline %s: make FIFO: %w (put the runs directory on a local filesystem that supports FIFOs)", path, err)
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("lifeline %s: open: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		f.Close()
		return nil, fmt.Errorf("lifeline %s: not the FIFO just made", path)
	}
	// Read-only to everyone from now on; our descriptor keeps its write access.
	if err := unix.Fchmod(fd, 0o444); err != nil {
		f.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("lifeline %s: chmod: %w", path, err)
	}
	return &Lifeline{path: path, f: f}, nil
}

// Path is the FIFO's host path, to be bound into the container read-only.
func (l *Lifeline) Path() string { return l.path }

// Close lets go of the FIFO, which makes the init of a container still watching it kill
// everything in it, and removes the FIFO. It is idempotent.
func (l *Lifeline) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("lifeline %s: close: %w", l.path, err)
	}
	return nil
}
