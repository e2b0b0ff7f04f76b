package snapshot

import (
	"fmt"
	"maps"
	"path"
	"slices"

	"golang.org/x/sys/unix"
)

// Staged describes a staging tree that a transport (the Kubernetes backend's tar stream)
// unpacked from a remote workspace, and what of that workspace the tree could not hold, so
// TakeStaged records the remote workspace as Take records the same tree found locally.
type Staged struct {
	// StandIns maps an entry path to what the remote entry was; staging holds an empty
	// placeholder there (a directory for KindDir, an empty regular file for the rest).
	StandIns map[string]StandIn
	// Incomplete maps a directory path ("" for the root) to why its remote listing did not
	// fully arrive (a refused name in it, the stream cut inside it): a name not captured
	// below it may exist.
	Incomplete map[string]string
	// Cut is set when the stream stopped at a cap (one entry past MaxEntries or
	// MaxPathBytes, so the walk reaches that cap where Take would): every directory in
	// Incomplete then gets the walk's own "listing cut" reason instead of its own.
	Cut bool
}

// StandIn is a remote entry staging could not reproduce.
type StandIn struct {
	Kind Kind
	// Size is a file's (or special file's) real size.
	Size int64
	// Exec is a file's owner-execute bit.
	Exec bool
	// Denied: the remote copier could not open it (the agent took its permissions away):
	// a file is omitted as unreadable, a directory's listing as unreadable. A file not
	// Denied is one whose bytes the copier left out for a cap, so it is omitted for the
	// cap it is over; a special file is never opened either way.
	Denied bool
}

// TakeStaged is Take of the staging tree src with st's stand-ins and incomplete listings
// applied, so one set of rules (and reason strings) makes both backends' manifests.
func TakeStaged(src, dst string, lim Limits, st Staged) (*Snapshot, error) {
	return takeFrom(src, dst, lim, &st)
}

// standIn records the stand-in si at rel as the walk records such an entry found locally.
func (w *walker) standIn(srcFD, dstFD, parent int, parentRel, rel, name string, depth int, si StandIn) error {
	mode := fileMode
	if si.Exec {
		mode = execMode
	}
	switch si.Kind {
	case KindDir:
		return w.dir(srcFD, dstFD, rel, name, depth, si.Denied)
	case KindFile:
		switch {
		case si.Denied:
			w.omitFile(rel, si.Size, mode, "permission denied; left out")
		case si.Size > w.lim.MaxFileBytes:
			w.omitFile(rel, si.Size, mode, fmt.Sprintf("over the %s per-file cap (file is %s); left out", human(w.lim.MaxFileBytes), human(si.Size)))
			w.hit(capFile, rel)
		case si.Size > w.lim.MaxTotalBytes-w.s.Bytes:
			room := w.lim.MaxTotalBytes - w.s.Bytes
			w.omitFile(rel, si.Size, mode, fmt.Sprintf("over the %s total cap (file is %s, %s left); left out", human(w.lim.MaxTotalBytes), human(si.Size), human(room)))
			w.hit(capTotal, rel)
		default:
			w.omitFile(rel, si.Size, mode, "its bytes were not transferred from the remote workspace; left out")
		}
		return nil
	case KindFIFO, KindSocket, KindCharDevice, KindBlockDevice:
		w.special(rel, kindMode[si.Kind], si.Size)
		return nil
	}
	w.note(rel, fmt.Sprintf("entry of unknown kind %q; skipped", si.Kind))
	w.omitDir(parent, parentRel, fmt.Sprintf("holds %s, which cannot be examined (unknown kind)", shortPath(name)))
	return nil
}

var kindMode = map[Kind]uint32{
	KindFIFO:        unix.S_IFIFO,
	KindSocket:      unix.S_IFSOCK,
	KindCharDevice:  unix.S_IFCHR,
	KindBlockDevice: unix.S_IFBLK,
}

// markIncomplete applies st.Incomplete once the walk is done: a directory's own reason (the
// walk's first, when it has one) is kept, as omitDir keeps the first.
func (w *walker) markIncomplete(st *Staged) {
	if st == nil || len(st.Incomplete) == 0 {
		return
	}
	at := make(map[string]int, len(st.Incomplete))
	for i, e := range w.s.Entries {
		if _, ok := st.Incomplete[e.Path]; ok && e.Kind == KindDir {
			at[e.Path] = i
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(st.Incomplete)) {
		reason := st.Incomplete[rel]
		if st.Cut && w.stopped {
			reason = "listing cut where the snapshot stopped (" + w.stopWhy + ")"
		}
		idx, ok := at[rel]
		switch {
		case rel == "":
			idx = rootIndex
		case !ok:
			// Not captured (below a cap or a refused parent): its nearest captured ancestor.
			for p := path.Dir(rel); ; p = path.Dir(p) {
				if p == "." {
					idx, rel = rootIndex, ""
					break
				}
				if i, ok := w.index(p); ok && w.s.Entries[i].Kind == KindDir {
					idx, rel = i, p
					break
				}
			}
		}
		w.omitDir(idx, rel, reason)
	}
}

// index finds the entry at rel by a linear search (only for the few directories a cut
// stream leaves incomplete that were not captured).
func (w *walker) index(rel string) (int, bool) {
	for i, e := range w.s.Entries {
		if e.Path == rel {
			return i, true
		}
	}
	return 0, false
}
