package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"ceval.dev/ceval/internal/rootfs"
)

// DefaultAllow are the trees of a plugin an agent should see: skills, slash commands,
// sub-agent definitions, hooks and the plugin's own metadata.
var DefaultAllow = []string{"skills", "commands", "agents", "hooks", ".claude-plugin"}

// DefaultDeny are names of grading material that must never be projected. A pattern is a
// glob matched, case-insensitively, against every name inside an allowlisted tree; a
// trailing "/" matches directories only.
var DefaultDeny = []string{"tests/", "test_*", "*_test.*", "check_*", "RESOLUTION.md", "solution*", "reference*"}

// Modes of everything Build writes: read-only for everyone. A file with any execute bit
// in the source (a hook or skill script) keeps execute for everyone.
const (
	DirMode      fs.FileMode = 0o555
	FileMode     fs.FileMode = 0o444
	ExecFileMode fs.FileMode = 0o555
)

// Options choose what Build projects; nil fields take DefaultAllow and DefaultDeny.
type Options struct {
	Allow []string // top-level directory names of the source to copy
	Deny  []string // name globs refused anywhere inside them
}

// Offender is one path of the source that makes Build refuse it.
type Offender struct {
	Path   string `json:"path"` // relative to the source, slash-separated
	Reason string `json:"reason"`
}

func (o Offender) String() string { return o.Path + ": " + o.Reason }

// RefusedError lists every offender of a source tree; nothing was written.
type RefusedError struct {
	Src       string
	Offenders []Offender
}

func (e *RefusedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "refused to project %s: %d offending path(s)", e.Src, len(e.Offenders))
	for _, o := range e.Offenders {
		b.WriteString("\n  ")
		b.WriteString(o.String())
	}
	return b.String()
}

// InputError is a problem with what Build was asked to do (options, the source or the
// output directory), as opposed to an I/O failure while doing it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func (o Options) withDefaults() (Options, error) {
	if o.Allow == nil {
		o.Allow = DefaultAllow
	}
	if o.Deny == nil {
		o.Deny = DefaultDeny
	}
	if len(o.Allow) == 0 {
		return o, errors.New("allow: name at least one tree")
	}
	seen := map[string]bool{}
	for _, a := range o.Allow {
		if a == "" || a == "." || a == ".." || strings.ContainsAny(a, "/\x00") {
			return o, fmt.Errorf("allow %q: want the name of a top-level directory of the source", a)
		}
		if seen[a] {
			return o, fmt.Errorf("allow %q: given twice", a)
		}
		seen[a] = true
	}
	deny := make([]string, len(o.Deny))
	for i, d := range o.Deny {
		g := strings.TrimSuffix(strings.ToLower(d), "/")
		if g == "" || strings.ContainsAny(g, "/\x00") {
			return o, fmt.Errorf("deny %q: want a name glob, optionally ending in / for directories only", d)
		}
		if _, err := path.Match(g, ""); err != nil {
			return o, fmt.Errorf("deny %q: %w", d, err)
		}
		deny[i] = strings.ToLower(d)
	}
	o.Deny = deny
	return o, nil
}

// denied reports the deny pattern a name matches, or "".
func (o Options) denied(name string, dir bool) string {
	lower := strings.ToLower(name)
	for _, d := range o.Deny {
		g, dirOnly := strings.CutSuffix(d, "/")
		if dirOnly && !dir {
			continue
		}
		if ok, _ := path.Match(g, lower); ok {
			return d
		}
	}
	return ""
}

// planned is one entry of the source that passed every check, with what copying needs.
type planned struct {
	Entry
	info fs.FileInfo // the source's lstat, for files: the open must find the same file
	exec bool
}

// Build projects the allowlisted trees of src into out: out/tree/ holds the copy (files
// 0444, or 0555 when executable in the source; directories 0555) and out/manifest.json its
// manifest. It reads src without following any symlink and refuses the whole source, with
// a *RefusedError listing every offender, when an allowlisted tree holds a denied name, an
// absolute symlink, a symlink whose target leaves its tree or passes through a denied name,
// a hard-linked file, or a special file. out must not exist or be an empty directory; it is
// written under a temporary name and renamed into place only when complete.
func Build(src, out string, o Options) (*Manifest, error) {
	root, err := os.OpenRoot(src)
	if err != nil {
		return nil, &InputError{fmt.Errorf("source: %w", err)}
	}
	defer root.Close()
	return BuildFrom(root, src, out, o)
}

// BuildFrom is Build reading the source through root, a directory the caller holds open (a
// task's plugin, opened when the task was loaded), so the source is that directory whatever
// its path names by now; src names it in errors.
func BuildFrom(root *os.Root, src, out string, o Options) (*Manifest, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, &InputError{err}
	}
	if err := checkOut(out); err != nil {
		return nil, &InputError{err}
	}
	plan, offenders, err := inspect(root, o)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", src, err)
	}
	if len(offenders) > 0 {
		sort.Slice(offenders, func(i, j int) bool { return offenders[i].Path < offenders[j].Path })
		return nil, &RefusedError{Src: src, Offenders: offenders}
	}
	if len(plan) == 0 {
		return nil, &InputError{fmt.Errorf("source %s holds none of the allowlisted trees (%s)", src, strings.Join(o.Allow, ", "))}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if tmp != "" {
			_ = removeReadOnly(tmp)
		}
	}()
	m, err := write(root, plan, tmp)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, DirMode); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, err
	}
	tmp = ""
	return m, nil
}

func checkOut(out string) error {
	if out == "" {
		return errors.New("output directory: empty path")
	}
	fi, err := os.Lstat(out)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("output %s exists and is not a directory", out)
	}
	names, err := os.ReadDir(out)
	if err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	if len(names) > 0 {
		return fmt.Errorf("output directory %s is not empty", out)
	}
	return nil
}

// inspect walks each allowlisted tree of the source without following links and returns
// the entries to copy, in path order, or every offender.
func inspect(root *os.Root, o Options) ([]planned, []Offender, error) {
	var plan []planned
	var offenders []Offender
	refuse := func(p, format string, a ...any) {
		offenders = append(offenders, Offender{Path: p, Reason: fmt.Sprintf(format, a...)})
	}
	lookup := func(p string) (string, string, bool) {
		fi, err := root.Lstat(p)
		if err != nil {
			return "", "", false
		}
		kind := kindOf(fi.Mode())
		if kind != KindSymlink {
			return kind, "", true
		}
		target, err := root.Readlink(p)
		if err != nil {
			return "", "", false
		}
		return kind, target, true
	}
	deniedName := func(name string) bool { return o.denied(name, true) != "" || o.denied(name, false) != "" }
	allow := slices.Clone(o.Allow)
	sort.Strings(allow)
	for _, top := range allow {
		fi, err := root.Lstat(top)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if !fi.IsDir() {
			refuse(top, "allowlisted tree is a %s, not a directory", kindOf(fi.Mode()))
			continue
		}
		err = fs.WalkDir(rootfs.NonBlocking(root), top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if len(plan)+len(offenders) >= MaxEntries {
				return fmt.Errorf("more than %d entries", MaxEntries)
			}
			fi, err := root.Lstat(p)
			if err != nil {
				return err
			}
			kind := kindOf(fi.Mode())
			if !utf8.ValidString(p) {
				refuse(strings.ToValidUTF8(p, "?"), "name is not valid UTF-8 (a manifest could not name it exactly)")
				if kind == KindDir {
					return fs.SkipDir
				}
				return nil
			}
			if pat := o.denied(path.Base(p), kind == KindDir); pat != "" {
				refuse(p, "denied by %q (grading material must not reach the agent)", pat)
				if kind == KindDir {
					return fs.SkipDir
				}
				return nil
			}
			e := planned{Entry: Entry{Path: p, Kind: kind}, info: fi}
			switch kind {
			case KindDir:
				e.Mode = fmt.Sprintf("%04o", DirMode)
			case KindFile:
				if n := nlink(fi); n > 1 {
					refuse(p, "hard-linked file (%d links): its content could be any file on the host", n)
					return nil
				}
				e.Size = fi.Size()
				e.exec = fi.Mode()&0o111 != 0
				e.Mode = fmt.Sprintf("%04o", FileMode)
				if e.exec {
					e.Mode = fmt.Sprintf("%04o", ExecFileMode)
				}
			case KindSymlink:
				if e.Target, err = root.Readlink(p); err != nil {
					return err
				}
				if !utf8.ValidString(e.Target) {
					refuse(p, "symlink target is not valid UTF-8")
					return nil
				}
				if reason := checkLink(lookup, p, e.Target, deniedName); reason != "" {
					refuse(p, "symlink to %q: %s", e.Target, reason)
					return nil
				}
			default:
				refuse(p, "special file (%s)", kind)
				return nil
			}
			plan = append(plan, e)
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	sort.Slice(plan, func(i, j int) bool { return plan[i].Path < plan[j].Path })
	return plan, offenders, nil
}

// write copies the plan into dir/tree, sets the read-only modes, and writes the manifest.
func write(src *os.Root, plan []planned, dir string) (*Manifest, error) {
	if err := os.Mkdir(filepath.Join(dir, TreeDir), 0o700); err != nil {
		return nil, err
	}
	dst, err := os.OpenRoot(filepath.Join(dir, TreeDir))
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	entries := make([]Entry, 0, len(plan))
	var dirs []string
	for _, e := range plan {
		switch e.Kind {
		case KindDir:
			if err := dst.Mkdir(e.Path, 0o700); err != nil {
				return nil, err
			}
			dirs = append(dirs, e.Path)
		case KindFile:
			size, sum, err := copyFile(src, dst, e)
			if err != nil {
				return nil, err
			}
			e.Size, e.SHA256 = size, sum
		case KindSymlink:
			// The link was checked when inspected; it must still say the same now.
			if now, err := src.Readlink(e.Path); err != nil || now != e.Target {
				return nil, fmt.Errorf("%s: symlink changed while the bundle was built", e.Path)
			}
			if err := dst.Symlink(e.Target, e.Path); err != nil {
				return nil, err
			}
		}
		entries = append(entries, e.Entry)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := dst.Chmod(dirs[i], DirMode); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(filepath.Join(dir, TreeDir), DirMode); err != nil {
		return nil, err
	}
	m := &Manifest{Version: ManifestVersion, TreeSHA256: Digest(entries), Entries: entries}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), m.encode(), FileMode); err != nil {
		return nil, err
	}
	return m, nil
}

// copyFile copies one planned regular file, hashing what it copies, through a descriptor
// that must be the file inspected (not a link, FIFO or replacement) and still singly linked.
func copyFile(src, dst *os.Root, e planned) (int64, string, error) {
	in, err := openChecked(src, e.Path, e.info)
	if err != nil {
		return 0, "", err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || nlink(fi) != 1 {
		return 0, "", fmt.Errorf("%s: became hard-linked while the bundle was built", e.Path)
	}
	out, err := dst.OpenFile(e.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return 0, "", err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), in)
	if err == nil {
		mode := FileMode
		if e.exec {
			mode = ExecFileMode
		}
		err = out.Chmod(mode)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", e.Path, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// removeReadOnly removes a tree Build made read-only.
func removeReadOnly(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
