package wasm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"

	"ceval.dev/ceval/wasm/wire"
)

// The views are built on ceval's side from bytes it read itself and streamed to the worker,
// which keeps them in memory: the worker never opens a host path, so no link of any kind in
// the workspace or the reference can take it anywhere.

// sendSnapshotView streams the snapshot's entries as a view. Files are read through
// snapshot.ReadFile; symlinks travel as their target strings, which the guest can read but
// never follow. What the snapshot omitted travels too (a file's type and size, a directory's
// incomplete listing), so the guest sees it and cannot read it. A snapshot copy is never
// hard-linked, so a file with more than one link in the snapshot directory means someone
// tampered with it: refuse it.
func sendSnapshotView(w io.Writer, s *snapshot.Snapshot) error {
	return sendView(w, s, wire.ViewBegin{Slot: wire.SlotWorkspace})
}

// sendView streams one snapshot as the view vb names.
func sendView(w io.Writer, s *snapshot.Snapshot, vb wire.ViewBegin) error {
	root, err := os.OpenRoot(s.Dir)
	if err != nil {
		return fmt.Errorf("workspace view: %w", err)
	}
	defer root.Close()
	if err := wire.WriteJSON(w, wire.OpViewBegin, vb); err != nil {
		return err
	}
	if s.RootOmitted != "" {
		if err := wire.WriteFrame(w, wire.OpIncomplete, []byte{0}, []byte(s.RootOmitted)); err != nil {
			return err
		}
	}
	for _, e := range s.Entries {
		switch {
		case e.Kind == snapshot.KindDir:
			err = wire.WriteFrame(w, wire.OpDir, []byte(e.Path))
			if err == nil && e.Omitted != "" {
				err = wire.WriteFrame(w, wire.OpIncomplete, []byte(e.Path), []byte{0}, []byte(e.Omitted))
			}
		case e.Omitted != "":
			err = writeOmitted(w, e)
		case e.Kind == snapshot.KindSymlink:
			err = wire.WriteFrame(w, wire.OpLink, []byte(e.Path), []byte{0}, []byte(e.Target))
		case e.Kind == snapshot.KindFile:
			if fi, lerr := root.Lstat(e.Path); lerr != nil {
				return fmt.Errorf("workspace view: %w", lerr)
			} else if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink != 1 {
				return fmt.Errorf("workspace view: snapshot file %s has %d links, but snapshot copies have one; refusing a tampered snapshot", e.Path, st.Nlink)
			}
			data, rerr := s.ReadFile(e.Path)
			if rerr != nil {
				return fmt.Errorf("workspace view: %w", rerr)
			}
			err = writeFile(w, e.Path, e.Mode, data)
		default:
			return fmt.Errorf("workspace view: entry %s has kind %q, which a view cannot show", e.Path, e.Kind)
		}
		if err != nil {
			return err
		}
	}
	return wire.WriteFrame(w, wire.OpViewEnd)
}

// omittedType is the file type a view shows for an omitted entry of each kind.
var omittedType = map[snapshot.Kind]fs.FileMode{
	snapshot.KindFile:        0,
	snapshot.KindFIFO:        fs.ModeNamedPipe,
	snapshot.KindSocket:      fs.ModeSocket,
	snapshot.KindCharDevice:  fs.ModeDevice | fs.ModeCharDevice,
	snapshot.KindBlockDevice: fs.ModeDevice,
}

func writeOmitted(w io.Writer, e snapshot.Entry) error {
	t, ok := omittedType[e.Kind]
	if !ok {
		return fmt.Errorf("workspace view: omitted entry %s has kind %q, which a view cannot show", e.Path, e.Kind)
	}
	var hdr [12]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(t|e.Mode.Perm()))
	binary.BigEndian.PutUint64(hdr[4:], uint64(max(e.Size, 0)))
	return wire.WriteFrame(w, wire.OpOmitted, hdr[:], []byte(e.Path), []byte{0}, []byte(e.Omitted))
}

func writeFile(w io.Writer, name string, mode fs.FileMode, data []byte) error {
	var m [4]byte
	binary.BigEndian.PutUint32(m[:], uint32(mode.Perm()))
	return wire.WriteFrame(w, wire.OpFile, m[:], []byte(name), []byte{0}, data)
}

// maxReferenceEntries caps the entries a reference view holds.
const maxReferenceEntries = 100_000

// sendReferenceView streams the task's reference directory as a view, reading it through
// the handle the task opened at load (never its path) and following no link: links become target strings, anything neither a
// directory, a regular file nor a link is left out. More than maxBytes of files is an
// error: the task asks for more than the sandbox holds. A failure half-way leaves the
// worker mid-view, so the caller must stop that worker.
func sendReferenceView(w io.Writer, ref *task.Dir, maxBytes int64) error {
	root := ref.Root()
	if root == nil {
		return errors.New("reference view: the reference directory was not opened with the task")
	}
	if err := wire.WriteJSON(w, wire.OpViewBegin, wire.ViewBegin{Slot: wire.SlotReference}); err != nil {
		return err
	}
	r := referenceWalk{root: root, w: w, maxBytes: maxBytes}
	if err := r.walk("."); err != nil {
		return fmt.Errorf("reference view of %s: %w", ref.Path, err)
	}
	return wire.WriteFrame(w, wire.OpViewEnd)
}

type referenceWalk struct {
	root            *os.Root
	w               io.Writer
	maxBytes, bytes int64
	entries         int
}

func (r *referenceWalk) walk(dir string) error {
	f, err := r.root.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0) // a FIFO swapped in fails, never blocks
	if err != nil {
		return err
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, d := range ents {
		if r.entries++; r.entries > maxReferenceEntries {
			return fmt.Errorf("more than %d entries", maxReferenceEntries)
		}
		rel := path.Join(dir, d.Name())
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			target, err := r.root.Readlink(rel)
			if err != nil {
				return err
			}
			if err := wire.WriteFrame(r.w, wire.OpLink, []byte(rel), []byte{0}, []byte(target)); err != nil {
				return err
			}
		case t.IsDir():
			if err := wire.WriteFrame(r.w, wire.OpDir, []byte(rel)); err != nil {
				return err
			}
			if err := r.walk(rel); err != nil {
				return err
			}
		case t.IsRegular():
			data, mode, err := r.readFile(rel)
			if err != nil {
				return err
			}
			if err := writeFile(r.w, rel, mode, data); err != nil {
				return err
			}
		}
	}
	return nil
}

// readFile reads a regular file without following a link in its last component: the
// opened file must be the one lstat saw.
func (r *referenceWalk) readFile(rel string) ([]byte, fs.FileMode, error) {
	li, err := r.root.Lstat(rel)
	if err != nil {
		return nil, 0, err
	}
	if !li.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s changed type while being read", rel)
	}
	if r.bytes+li.Size() > r.maxBytes {
		return nil, 0, fmt.Errorf("over the %s view limit at %s", human(r.maxBytes), rel)
	}
	f, err := r.root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !os.SameFile(li, fi) {
		return nil, 0, fmt.Errorf("%s changed while being opened", rel)
	}
	data, err := io.ReadAll(io.LimitReader(f, r.maxBytes-r.bytes+1))
	if err != nil {
		return nil, 0, err
	}
	r.bytes += int64(len(data))
	if r.bytes > r.maxBytes {
		return nil, 0, fmt.Errorf("over the %s view limit at %s", human(r.maxBytes), rel)
	}
	mode := fs.FileMode(0o644)
	if fi.Mode()&0o100 != 0 {
		mode = 0o755
	}
	return data, mode, nil
}

// human renders a byte count for details and errors.
func human(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
