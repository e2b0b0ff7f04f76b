package snapshot

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// manifestFormat names the manifest layout; Load refuses any other but the older
// manifestFormat1, which lacks Omitted entries and reads the same.
const (
	manifestFormat  = "ceval-snapshot/2"
	manifestFormat1 = "ceval-snapshot/1"
)

// maxManifestBytes bounds what Load reads: the path cap keeps a manifest's paths to a few
// times Limits.MaxPathBytes.
const maxManifestBytes = 256 << 20

type manifest struct {
	Format string `json:"format"`
	*Snapshot
}

// entryJSON is Entry with its mode as an octal string ("0644"), as people read modes.
type entryJSON struct {
	Path    string `json:"path"`
	Kind    Kind   `json:"kind"`
	Size    int64  `json:"size"`
	Mode    string `json:"mode,omitempty"`
	Target  string `json:"target,omitempty"`
	Omitted string `json:"omitted,omitempty"`
}

// MarshalJSON writes the mode as an octal string.
func (e Entry) MarshalJSON() ([]byte, error) {
	j := entryJSON{Path: e.Path, Kind: e.Kind, Size: e.Size, Target: e.Target, Omitted: e.Omitted}
	if e.Kind == KindFile || e.Kind == KindDir {
		j.Mode = fmt.Sprintf("%04o", uint32(e.Mode.Perm()))
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var j entryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	var mode uint64
	if j.Mode != "" {
		var err error
		if mode, err = strconv.ParseUint(j.Mode, 8, 32); err != nil || mode&^0o777 != 0 {
			return fmt.Errorf("entry %s: bad mode %q", j.Path, j.Mode)
		}
	}
	*e = Entry{Path: j.Path, Kind: j.Kind, Size: j.Size, Mode: fs.FileMode(mode), Target: j.Target, Omitted: j.Omitted}
	return nil
}

// WriteManifest writes the snapshot's entries, notes, truncation, byte count and limits
// as JSON to path, atomically: a temporary file beside it, fsynced, renamed over path,
// and the directory fsynced. Keep path outside Dir, so no agent file can pose as it.
func (s *Snapshot) WriteManifest(path string) error {
	// The copied files reach the disk before the manifest that vouches for them: one
	// syncfs of their filesystem, not a fsync per file.
	if s.Dir != "" {
		if err := syncFS(s.Dir); err != nil {
			return fmt.Errorf("snapshot: sync the copied files in %s: %w", s.Dir, err)
		}
	}
	return s.writeManifest(path, true)
}

// WriteManifestUnsynced is WriteManifest without any sync: the manifest is renamed into
// place whole, but neither it nor the copied files are durable yet. For a caller that
// vouches for both later, once, with a sync of their filesystem (supervisor's run record
// syncs it before result.json is renamed into place, and only a complete result.json makes
// a reader trust the manifest).
func (s *Snapshot) WriteManifestUnsynced(path string) error { return s.writeManifest(path, false) }

func (s *Snapshot) writeManifest(path string, sync bool) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("snapshot manifest: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	err = s.encodeManifest(tmp)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil && sync {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil && sync {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("snapshot manifest: write %s: %w", path, err)
	}
	return nil
}

// encodeManifest streams the manifest to w, one entry and one note a line, so writing it
// costs a buffer, not a second copy of every path.
func (s *Snapshot) encodeManifest(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	field := func(name string, v any, last bool) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		fmt.Fprintf(bw, "  %q: %s", name, b)
		if !last {
			bw.WriteString(",")
		}
		_, err = bw.WriteString("\n")
		return err
	}
	list := func(name string, n int, item func(int) any, last bool) error {
		fmt.Fprintf(bw, "  %q: [", name)
		for i := range n {
			b, err := json.Marshal(item(i))
			if err != nil {
				return err
			}
			if i > 0 {
				bw.WriteString(",")
			}
			bw.WriteString("\n    ")
			bw.Write(b)
		}
		if n > 0 {
			bw.WriteString("\n  ")
		}
		bw.WriteString("]")
		if !last {
			bw.WriteString(",")
		}
		_, err := bw.WriteString("\n")
		return err
	}
	bw.WriteString("{\n")
	errs := []error{
		field("format", manifestFormat, false),
		field("truncated", s.Truncated, false),
		field("bytes", s.Bytes, false),
		field("limits", s.Limits, false),
	}
	if s.RootOmitted != "" {
		errs = append(errs, field("root_omitted", s.RootOmitted, false))
	}
	if len(s.LimitsHit) > 0 {
		errs = append(errs, field("limits_hit", s.LimitsHit, false))
	}
	errs = append(errs,
		list("notes", len(s.Notes), func(i int) any { return s.Notes[i] }, false),
		list("entries", len(s.Entries), func(i int) any { return s.Entries[i] }, true))
	bw.WriteString("}\n")
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return bw.Flush()
}

// syncFS flushes the filesystem holding dir.
func syncFS(dir string) error {
	return withDir(dir, func(d *os.File) error { return unix.Syncfs(int(d.Fd())) })
}

// syncDir flushes dir's own entries.
func syncDir(dir string) error { return withDir(dir, (*os.File).Sync) }

func withDir(dir string, f func(*os.File) error) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return f(d)
}

// Load reopens a snapshot stored by Take in dir with its manifest written by
// WriteManifest. It validates every entry path and kind, and that dir is a real
// directory; file contents are checked against the manifest as ReadFile reads them.
func Load(dir, manifestPath string) (*Snapshot, error) {
	f, err := os.Open(manifestPath)
	if err != nil {
		return nil, fmt.Errorf("snapshot load: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("snapshot load: read %s: %w", manifestPath, err)
	}
	if len(b) > maxManifestBytes {
		return nil, fmt.Errorf("snapshot load: %s is over %s", manifestPath, human(maxManifestBytes))
	}
	s := &Snapshot{}
	m := manifest{Snapshot: s}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("snapshot load: parse %s: %w", manifestPath, err)
	}
	if m.Format != manifestFormat && m.Format != manifestFormat1 {
		return nil, fmt.Errorf("snapshot load: %s has format %q, want %q", manifestPath, m.Format, manifestFormat)
	}
	seen := make(map[string]bool, len(s.Entries))
	for _, e := range s.Entries {
		if c, ok := clean(e.Path); !ok || c != e.Path {
			return nil, fmt.Errorf("snapshot load: %s: bad entry path %q", manifestPath, e.Path)
		}
		if seen[e.Path] {
			return nil, fmt.Errorf("snapshot load: %s: duplicate entry %q", manifestPath, e.Path)
		}
		seen[e.Path] = true
		switch e.Kind {
		case KindFile, KindDir, KindSymlink:
		case KindFIFO, KindSocket, KindCharDevice, KindBlockDevice:
			if e.Omitted == "" {
				return nil, fmt.Errorf("snapshot load: %s: %s entry %q is not marked omitted", manifestPath, e.Kind, e.Path)
			}
		default:
			return nil, fmt.Errorf("snapshot load: %s: entry %q has unknown kind %q", manifestPath, e.Path, e.Kind)
		}
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot load: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("snapshot load: %s is not a directory", dir)
	}
	if s.Entries == nil {
		s.Entries = []Entry{}
	}
	if s.Notes == nil {
		s.Notes = []Note{}
	}
	s.Dir = dir
	return s, nil
}
