package snapshot

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// ErrSymlink is wrapped by ReadFile's error for a path captured as a symlink.
var ErrSymlink = errors.New("ceval does not follow links")

// ErrOmitted is wrapped by ReadFile's error for content a cap or an error left out of the
// snapshot: an Omitted entry, or a path not captured below a directory whose listing is
// incomplete. Such a path may exist in the workspace; it is never reported absent.
var ErrOmitted = errors.New("omitted from the snapshot")

// clean turns a caller's path into an entry path: cleaned, relative, inside the root.
func clean(rel string) (string, bool) {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.ContainsRune(rel, 0) {
		return "", false
	}
	c := path.Clean(rel)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}

func (s *Snapshot) index() {
	s.indexOnce.Do(func() {
		s.byPath = make(map[string]int, len(s.Entries))
		for i, e := range s.Entries {
			s.byPath[e.Path] = i
		}
		s.noteBy = make(map[string]int, len(s.Notes))
		for i, n := range s.Notes {
			if _, dup := s.noteBy[n.Path]; !dup {
				s.noteBy[n.Path] = i
			}
		}
	})
}

// Lookup finds the captured entry at rel, which is cleaned lexically first ("./a" is "a",
// "a/../b" is "b"). A path that leaves the root ("../x", "/etc/passwd") is never found,
// nor is anything below a symlink: links are not followed, even here.
func (s *Snapshot) Lookup(rel string) (Entry, bool) {
	c, ok := clean(rel)
	if !ok {
		return Entry{}, false
	}
	s.index()
	i, ok := s.byPath[c]
	if !ok {
		return Entry{}, false
	}
	return s.Entries[i], true
}

// NoteFor returns the note that explains rel: the note on rel itself, else the nearest
// ancestor's (a directory left out or cut at the depth cap, a symlink not followed), else,
// when rel was not captured and the snapshot stopped early, the note saying where it stopped.
func (s *Snapshot) NoteFor(rel string) (Note, bool) {
	c, ok := clean(rel)
	if !ok {
		return Note{}, false
	}
	s.index()
	if i, ok := s.noteBy[c]; ok {
		return s.Notes[i], true
	}
	for p := path.Dir(c); p != "."; p = path.Dir(p) {
		if i, ok := s.noteBy[p]; ok {
			return s.Notes[i], true
		}
		if i, ok := s.byPath[p]; ok && s.Entries[i].Kind == KindSymlink {
			return Note{Path: p, Reason: fmt.Sprintf("is a symlink to %s; %v", s.Entries[i].Target, ErrSymlink)}, true
		}
	}
	if _, captured := s.byPath[c]; !captured && s.Truncated && len(s.Notes) > 0 {
		return s.Notes[len(s.Notes)-1], true // Take's last note is the one that stopped it
	}
	return Note{}, false
}

// Unvouched reports whether rel, though not captured, may exist in the workspace: the
// deepest captured directory on its way (the root included) has an incomplete listing.
// The note names that directory and why. A path that is captured, leaves the root, or lies
// below a captured file, symlink or complete directory lacking its next component is not
// unvouched: the snapshot vouches that it is there, or that it is not.
func (s *Snapshot) Unvouched(rel string) (Note, bool) {
	c, ok := clean(rel)
	if !ok {
		return Note{}, false
	}
	s.index()
	if _, captured := s.byPath[c]; captured {
		return Note{}, false
	}
	dir, reason := ".", s.RootOmitted
	for i := 0; i < len(c); i++ {
		if c[i] != '/' {
			continue
		}
		j, ok := s.byPath[c[:i]]
		if !ok {
			break // the first component not captured: its parent's listing decides
		}
		if e := s.Entries[j]; e.Kind != KindDir {
			return Note{}, false // below a file or a link: nothing can be there
		}
		dir, reason = c[:i], s.Entries[j].Omitted
	}
	if reason == "" {
		return Note{}, false
	}
	return Note{Path: dir, Reason: "directory " + reason}, true
}

// Glob returns the entries whose path matches pattern, in Entries order. Each
// slash-separated segment matches as in path.Match, and a "**" segment matches any number
// of segments, none included. A malformed pattern, or one that leaves the root, matches
// nothing.
func (s *Snapshot) Glob(pattern string) []Entry {
	segs, ok := globSegments(pattern)
	if !ok {
		return nil
	}
	var out []Entry
	for _, e := range s.Entries {
		if matchSegments(segs, strings.Split(e.Path, "/")) {
			out = append(out, e)
		}
	}
	return out
}

func globSegments(pattern string) ([]string, bool) {
	if pattern == "" || strings.HasPrefix(pattern, "/") {
		return nil, false
	}
	var segs []string
	for _, seg := range strings.Split(pattern, "/") {
		switch seg {
		case "", ".":
			continue
		case "..":
			return nil, false
		case "**":
			if len(segs) > 0 && segs[len(segs)-1] == "**" {
				continue
			}
		default:
			if _, err := path.Match(seg, ""); err != nil {
				return nil, false
			}
		}
		segs = append(segs, seg)
	}
	return segs, len(segs) > 0
}

// matchSegments matches path segments against pattern segments in O(len(pat)*len(name)),
// so repeated "**" cannot make it exponential.
func matchSegments(pat, name []string) bool {
	// ok[j]: pat[:i] matches name[:j], for the current i.
	ok := make([]bool, len(name)+1)
	ok[0] = true
	for _, p := range pat {
		if p == "**" {
			for j := 1; j <= len(name); j++ {
				ok[j] = ok[j] || ok[j-1]
			}
			continue
		}
		for j := len(name); j >= 1; j-- {
			m, _ := path.Match(p, name[j-1])
			ok[j] = ok[j-1] && m
		}
		ok[0] = false
	}
	return ok[len(name)]
}

// ReadFile returns the bytes of the regular file captured at rel. A symlink entry is an
// error wrapping ErrSymlink; a path not captured is an error wrapping fs.ErrNotExist that
// carries NoteFor's reason. The read goes through an os.Root on Dir and refuses anything
// on disk that is not the regular file of the entry's size, though Take never puts a link
// there.
func (s *Snapshot) ReadFile(rel string) ([]byte, error) {
	c, ok := clean(rel)
	if !ok {
		return nil, fmt.Errorf("snapshot: %q is outside the workspace: %w", rel, fs.ErrNotExist)
	}
	e, ok := s.Lookup(c)
	if !ok {
		if n, ok := s.Unvouched(c); ok {
			return nil, fmt.Errorf("snapshot: %s not captured and may exist (%s: %s): %w", c, n.Path, n.Reason, ErrOmitted)
		}
		if n, ok := s.NoteFor(c); ok {
			return nil, fmt.Errorf("snapshot: %s not captured (%s: %s): %w", c, n.Path, n.Reason, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("snapshot: %s: %w", c, fs.ErrNotExist)
	}
	switch e.Kind {
	case KindSymlink:
		return nil, fmt.Errorf("snapshot: %s is a symlink to %s; %w", c, e.Target, ErrSymlink)
	case KindDir:
		return nil, fmt.Errorf("snapshot: %s is a directory", c)
	case KindFile:
		if e.Omitted != "" {
			return nil, fmt.Errorf("snapshot: %s (%s) omitted: %s: %w", c, human(e.Size), e.Omitted, ErrOmitted)
		}
	default:
		return nil, fmt.Errorf("snapshot: %s is a %s (%s): %w", c, e.Kind, e.Omitted, ErrOmitted)
	}

	root, err := os.OpenRoot(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	defer root.Close()
	// os.Root follows links that stay inside it, even with O_NOFOLLOW: lstat first, then
	// insist the opened file is that same inode.
	li, err := root.Lstat(c)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if !li.Mode().IsRegular() {
		return nil, fmt.Errorf("snapshot: %s in %s is a %v on disk, not a regular file", c, s.Dir, li.Mode().Type())
	}
	f, err := root.OpenFile(c, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if !os.SameFile(li, fi) || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("snapshot: %s in %s changed while being opened", c, s.Dir)
	}
	if fi.Size() != e.Size {
		return nil, fmt.Errorf("snapshot: %s in %s is %d bytes on disk, %d in the manifest", c, s.Dir, fi.Size(), e.Size)
	}
	b, err := io.ReadAll(io.LimitReader(f, e.Size+1))
	if err != nil {
		return nil, fmt.Errorf("snapshot: read %s: %w", c, err)
	}
	if int64(len(b)) != e.Size {
		return nil, fmt.Errorf("snapshot: %s in %s changed size while being read", c, s.Dir)
	}
	return b, nil
}
