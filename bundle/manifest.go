package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"unicode/utf8"

	"ceval.dev/ceval/internal/lazyregexp"
)

// Layout of a built bundle directory.
const (
	ManifestFile = "manifest.json" // beside the tree
	TreeDir      = "tree"          // the projected plugin root: what is mounted
)

// Limits on what a bundle may hold, so a manifest or a tree cannot exhaust ceval.
const (
	MaxManifestBytes = 64 << 20
	MaxEntries       = 100_000
	MaxLinkHops      = 40 // like the kernel's ELOOP bound
)

// Entry kinds.
const (
	KindDir     = "dir"
	KindFile    = "file"
	KindSymlink = "symlink"
)

// ManifestVersion is the only manifest format this package reads and writes.
const ManifestVersion = 1

// Manifest is manifest.json: every entry of the tree and one digest over all of them.
type Manifest struct {
	Version int `json:"version"`
	// TreeSHA256 is the sha256 of the entries, each encoded as compact JSON on its own line,
	// in path order: it changes when any byte, mode, link target or name in the tree does.
	TreeSHA256 string  `json:"tree_sha256"`
	Entries    []Entry `json:"entries"`
}

// Entry is one directory, regular file or symlink of the tree.
type Entry struct {
	Path   string `json:"path"` // slash-separated, relative to the tree, clean
	Kind   string `json:"kind"`
	Mode   string `json:"mode,omitempty"`   // permission bits in octal ("0444"); none for a symlink
	Size   int64  `json:"size,omitempty"`   // files only
	SHA256 string `json:"sha256,omitempty"` // files only
	Target string `json:"target,omitempty"` // symlinks only, exactly as read from the link
}

// Digest returns the tree digest of entries (already in path order).
func Digest(entries []Entry) string {
	h := sha256.New()
	for _, e := range entries {
		line, _ := json.Marshal(e) // a struct of strings and ints: cannot fail
		h.Write(line)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

var (
	hexSHA256 = lazyregexp.New(`^[0-9a-f]{64}$`)
	octalMode = lazyregexp.New(`^0[0-7]{3}$`)
)

// ParseManifest decodes and checks a manifest strictly: known fields only, entries in path
// order with clean, unique paths whose parents are directories of the manifest, fields
// that fit each kind, symlinks that stay inside their own top-level tree, and a digest that
// matches the entries. A manifest that passes describes a tree Build could have made.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("manifest: larger than %d bytes", MaxManifestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("manifest: trailing data after the JSON object")
	}
	if m.Version != ManifestVersion {
		return nil, fmt.Errorf("manifest: version %d, want %d", m.Version, ManifestVersion)
	}
	if len(m.Entries) > MaxEntries {
		return nil, fmt.Errorf("manifest: %d entries, more than %d", len(m.Entries), MaxEntries)
	}
	if m.Entries == nil {
		m.Entries = []Entry{}
	}
	kinds := make(map[string]*Entry, len(m.Entries))
	for i := range m.Entries {
		e := &m.Entries[i]
		if err := checkEntry(e); err != nil {
			return nil, fmt.Errorf("manifest: entry %d: %w", i, err)
		}
		if i > 0 && m.Entries[i-1].Path >= e.Path {
			return nil, fmt.Errorf("manifest: entry %d %q: entries must be in strictly increasing path order", i, e.Path)
		}
		if dir := path.Dir(e.Path); dir != "." {
			if p := kinds[dir]; p == nil || p.Kind != KindDir {
				return nil, fmt.Errorf("manifest: entry %q: its parent %q is not a directory of the manifest", e.Path, dir)
			}
		} else if e.Kind != KindDir {
			return nil, fmt.Errorf("manifest: entry %q: a top-level tree must be a directory", e.Path)
		}
		kinds[e.Path] = e
	}
	lookup := func(p string) (string, string, bool) {
		if e := kinds[p]; e != nil {
			return e.Kind, e.Target, true
		}
		return "", "", false
	}
	for _, e := range m.Entries {
		if e.Kind != KindSymlink {
			continue
		}
		if reason := checkLink(lookup, e.Path, e.Target, nil); reason != "" {
			return nil, fmt.Errorf("manifest: symlink %q -> %q: %s", e.Path, e.Target, reason)
		}
	}
	if !hexSHA256.MatchString(m.TreeSHA256) {
		return nil, errors.New("manifest: tree_sha256 must be 64 lowercase hex digits")
	}
	if got := Digest(m.Entries); got != m.TreeSHA256 {
		return nil, fmt.Errorf("manifest: tree_sha256 %s does not match its entries (%s)", m.TreeSHA256, got)
	}
	return &m, nil
}

func checkEntry(e *Entry) error {
	if err := checkRelPath(e.Path); err != nil {
		return err
	}
	switch e.Kind {
	case KindDir:
		if !octalMode.MatchString(e.Mode) || e.Size != 0 || e.SHA256 != "" || e.Target != "" {
			return fmt.Errorf("%q: a dir has a mode and nothing else", e.Path)
		}
	case KindFile:
		if !octalMode.MatchString(e.Mode) || e.Size < 0 || !hexSHA256.MatchString(e.SHA256) || e.Target != "" {
			return fmt.Errorf("%q: a file has a mode, a size and a sha256 (64 lowercase hex digits)", e.Path)
		}
	case KindSymlink:
		if e.Mode != "" || e.Size != 0 || e.SHA256 != "" || e.Target == "" || strings.ContainsRune(e.Target, 0) || !utf8.ValidString(e.Target) {
			return fmt.Errorf("%q: a symlink has a target and nothing else", e.Path)
		}
	default:
		return fmt.Errorf("%q: kind %q, want dir, file or symlink", e.Path, e.Kind)
	}
	return nil
}

// checkRelPath accepts a clean, relative, slash-separated path of valid UTF-8 that names
// something below the tree.
func checkRelPath(p string) error {
	if p == "" || p == "." || path.Clean(p) != p || strings.HasPrefix(p, "/") || p == ".." ||
		strings.HasPrefix(p, "../") || strings.ContainsRune(p, 0) || !utf8.ValidString(p) {
		return fmt.Errorf("path %q: want a clean relative path inside the tree", p)
	}
	return nil
}

// encode returns the manifest as indented JSON.
func (m *Manifest) encode() []byte {
	data, _ := json.MarshalIndent(m, "", "  ")
	return append(data, '\n')
}

// lookupFunc reports the kind (and a symlink's target) of a path relative to the root of
// everything, or ok=false when nothing is there.
type lookupFunc func(p string) (kind, target string, ok bool)

// checkLink follows the symlink at linkPath (target as read from it) the way the kernel
// would, one component at a time through lookup, and returns why it is refused, or "" when
// it stays inside its own top-level tree (the first component of linkPath) at every step
// and never passes through a name denied matches. A dangling link that stays inside is
// accepted.
func checkLink(lookup lookupFunc, linkPath, target string, denied func(name string) bool) string {
	tree, _, inTree := strings.Cut(linkPath, "/")
	if !inTree {
		return "a top-level tree must be a directory, not a symlink"
	}
	if strings.HasPrefix(target, "/") {
		return "absolute symlink"
	}
	cur := strings.Split(path.Dir(linkPath), "/")
	rest := strings.Split(target, "/")
	hops := 1
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) <= 1 {
				return fmt.Sprintf("target leaves its tree %s/", tree)
			}
			cur = cur[:len(cur)-1]
			continue
		}
		cur = append(cur, c)
		if denied != nil && denied(c) {
			return fmt.Sprintf("target passes through the denied path %s", strings.Join(cur, "/"))
		}
		kind, next, ok := lookup(strings.Join(cur, "/"))
		if !ok || kind != KindSymlink {
			continue
		}
		if hops++; hops > MaxLinkHops {
			return "too many levels of symbolic links"
		}
		if strings.HasPrefix(next, "/") {
			return fmt.Sprintf("target passes through %s, an absolute symlink", strings.Join(cur, "/"))
		}
		cur = cur[:len(cur)-1]
		rest = append(strings.Split(next, "/"), rest...)
	}
	return ""
}
