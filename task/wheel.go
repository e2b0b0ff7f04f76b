package task

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
)

// Wheel is one python_wheels entry: a pure-Python wheel (py3-none-any) from the task's
// directory, pinned by sha256, read and unpacked by ceval at load. Its files are what the
// WASM sandbox's CPython imports from /ceval/packages; the archive itself is never handed
// to anything else.
type Wheel struct {
	Path   string // absolute, inside the task's directory
	SHA256 string // of the .whl file, as pinned and checked
	Files  []WheelFile
	// Top are the top-level names it installs (packages, modules, its .dist-info).
	Top []string

	node *yaml.Node // where the task file names it
}

// WheelFile is one regular file a wheel installs, relative to the packages directory.
type WheelFile struct {
	Name string // clean, slash-separated, relative
	Data []byte
}

// Bounds of an unpacked wheel: an archive over any of them is refused (a zip bomb).
const (
	MaxWheelFiles     = 10_000
	MaxWheelFileBytes = 16 << 20
	MaxWheelBytes     = 64 << 20
	// MaxTaskWheelBytes bounds the distinct wheels of one task unpacked together (each is
	// held in memory until the task is closed).
	MaxTaskWheelBytes = 128 << 20
	// maxWheelRatio bounds how much one entry may inflate: pure-Python source compresses
	// about 3-5x; a ratio this high is a bomb.
	maxWheelRatio = 200
)

// wheelName is NAME-VERSION(-BUILD)?-PYTHON-ABI-PLATFORM.whl (PEP 427).
var wheelName = lazyregexp.New(`^([A-Za-z0-9_.]+)-([A-Za-z0-9_.!+]+)(-[0-9][A-Za-z0-9_.]*)?-([A-Za-z0-9_.]+)-([A-Za-z0-9_.]+)-([A-Za-z0-9_.]+)\.whl$`)

// pythonWheels reads python_wheels: [{path: wheels/NAME-VER-py3-none-any.whl, sha256: HEX}].
func (l *loader) pythonWheels(n *yaml.Node, what string, dst *[]*Wheel) {
	l.list(n, what, func(i int, item *yaml.Node) {
		iw := what + "[" + strconv.Itoa(i) + "]"
		var pathNode, sumNode *yaml.Node
		var sum string
		seen := l.mapping(item, iw, []field{
			{"path", func(v *yaml.Node) { pathNode = v }},
			{"sha256", func(v *yaml.Node) {
				sumNode = v
				l.str(v, iw+".sha256", &sum)
				if sum != "" && !sha256Pattern.MatchString(sum) {
					l.errorf(resolve(v), "%s.sha256 must be 64 lowercase hex digits", iw)
				}
			}},
		})
		if seen == nil {
			return
		}
		if pathNode == nil || sumNode == nil {
			l.errorf(resolve(item), "%s: give path (a .whl file beside the task) and sha256 (its digest)", iw)
			return
		}
		p, data := l.readFile(pathNode, iw+".path")
		if p == "" || !sha256Pattern.MatchString(sum) {
			return
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
			l.errorf(resolve(sumNode), "%s: %s has sha256 %x, not the pinned %s", iw, filepath.Base(p), got, sum)
			return
		}
		w, ok := l.unpackWheel(pathNode, iw, p, sum, data)
		if !ok {
			return
		}
		for _, other := range *dst {
			if other.SHA256 == w.SHA256 {
				return
			}
			for _, top := range w.Top {
				if slices.Contains(other.Top, top) {
					l.errorf(resolve(pathNode), "%s: %s and %s both install %q", iw, filepath.Base(other.Path), filepath.Base(p), top)
					return
				}
			}
		}
		*dst = append(*dst, w)
	})
}

// unpackWheel unpacks the wheel data (checked against sum) once per task: a wheel named
// again shares the files of the first, and the task's distinct wheels are bounded together
// (MaxTaskWheelBytes), so a small bomb named by a hundred criteria is not held a hundred times.
func (l *loader) unpackWheel(pathNode *yaml.Node, iw, p, sum string, data []byte) (*Wheel, bool) {
	if cached, ok := l.wheels[sum]; ok {
		w := *cached
		w.Path, w.node = p, resolve(pathNode)
		return &w, true
	}
	w, err := UnpackWheel(filepath.Base(p), data)
	if err != nil {
		l.errorf(resolve(pathNode), "%s: %v", iw, err)
		return nil, false
	}
	var n int64
	for _, f := range w.Files {
		n += int64(len(f.Data))
	}
	if l.wheelBytes+n > MaxTaskWheelBytes {
		l.errorf(resolve(pathNode), "%s: %s unpacks to %d MiB, past the %d MiB the task's wheels may hold together", iw, filepath.Base(p), (l.wheelBytes+n)>>20, MaxTaskWheelBytes>>20)
		return nil, false
	}
	l.wheelBytes += n
	w.Path, w.SHA256, w.node = p, sum, resolve(pathNode)
	if l.wheels == nil {
		l.wheels = map[string]*Wheel{}
	}
	l.wheels[sum] = w
	return w, true
}

// UnpackWheel reads a wheel archive (named name) in memory and returns the files it
// installs. It refuses what is not a pure-Python wheel (its tags, its WHEEL metadata, any
// native library) and every hostile archive: a path that is absolute or climbs out, a
// link or special file, an entry named twice, an encrypted entry, files a purelib install
// would put elsewhere (scripts, headers, data), and more files or bytes than the bounds
// above, whatever the archive declares.
func UnpackWheel(name string, data []byte) (*Wheel, error) {
	m := wheelName.FindStringSubmatch(name)
	if m == nil {
		return nil, fmt.Errorf("%q is not a wheel's file name (NAME-VERSION-PYTHON-ABI-PLATFORM.whl)", name)
	}
	pyTags, abi, platform := m[4], m[5], m[6]
	if !slices.Contains(strings.Split(pyTags, "."), "py3") || abi != "none" || platform != "any" {
		return nil, fmt.Errorf("%s is not a pure-Python wheel (tags %s-%s-%s): only py3-none-any wheels run in the sandbox's CPython, which cannot load native code", name, pyTags, abi, platform)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable zip archive: %v", name, err)
	}
	if len(zr.File) > MaxWheelFiles {
		return nil, fmt.Errorf("%s holds %d entries, over the %d ceval unpacks", name, len(zr.File), MaxWheelFiles)
	}
	w := &Wheel{}
	seen := map[string]bool{}
	dirs := map[string]bool{}
	var total int64
	var wheelMeta []byte
	for _, f := range zr.File {
		if err := checkWheelEntryName(f.Name); err != nil {
			return nil, fmt.Errorf("%s: entry %q: %v", name, f.Name, err)
		}
		mode := f.Mode()
		if mode.IsDir() || strings.HasSuffix(f.Name, "/") {
			if !mode.IsDir() && mode.Type() != 0 {
				return nil, fmt.Errorf("%s: entry %q is a %s, not a directory", name, f.Name, wheelEntryKind(mode))
			}
			continue
		}
		if !mode.IsRegular() {
			return nil, fmt.Errorf("%s: entry %q is a %s; a wheel ceval unpacks holds regular files only", name, f.Name, wheelEntryKind(mode))
		}
		if f.Flags&0x1 != 0 {
			return nil, fmt.Errorf("%s: entry %q is encrypted", name, f.Name)
		}
		dst, err := wheelInstallPath(f.Name)
		if err != nil {
			return nil, fmt.Errorf("%s: entry %q: %v", name, f.Name, err)
		}
		if seen[dst] {
			return nil, fmt.Errorf("%s: %q is in the archive twice", name, dst)
		}
		seen[dst] = true
		if isNative(path.Base(dst)) {
			return nil, fmt.Errorf("%s has native code (%s), which CPython for WASI cannot load; only pure-Python wheels run in the sandbox", name, dst)
		}
		if strings.HasSuffix(dst, ".pth") && !strings.Contains(dst, "/") {
			return nil, fmt.Errorf("%s installs a .pth file (%s), which the sandbox never processes: ship the code as a package instead", name, dst)
		}
		body, err := readWheelEntry(f, MaxWheelFileBytes, MaxWheelBytes-total)
		if err != nil {
			return nil, fmt.Errorf("%s: entry %q: %v", name, f.Name, err)
		}
		total += int64(len(body))
		for d := path.Dir(dst); d != "." && d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
		w.Files = append(w.Files, WheelFile{Name: dst, Data: body})
		if d, base := path.Split(dst); base == "WHEEL" && strings.HasSuffix(d, ".dist-info/") && strings.Count(d, "/") == 1 {
			if wheelMeta != nil {
				return nil, fmt.Errorf("%s holds more than one .dist-info/WHEEL", name)
			}
			wheelMeta = body
		}
	}
	for _, f := range w.Files {
		if dirs[f.Name] {
			return nil, fmt.Errorf("%s: %q is both a file and a directory", name, f.Name)
		}
	}
	if wheelMeta == nil {
		return nil, fmt.Errorf("%s has no NAME.dist-info/WHEEL: not a wheel", name)
	}
	if err := checkWheelMetadata(wheelMeta); err != nil {
		return nil, fmt.Errorf("%s: WHEEL: %v", name, err)
	}
	tops := map[string]bool{}
	for _, f := range w.Files {
		top, _, _ := strings.Cut(f.Name, "/")
		if !tops[top] {
			tops[top] = true
			w.Top = append(w.Top, top)
		}
	}
	slices.Sort(w.Top)
	return w, nil
}

// checkWheelEntryName refuses a name that could land anywhere but below the directory it
// is unpacked in, or that no file system would read the same way everywhere.
func checkWheelEntryName(n string) error {
	switch {
	case n == "" || strings.HasPrefix(n, "/"):
		return fmt.Errorf("an absolute or empty path")
	case strings.ContainsRune(n, '\\'):
		return fmt.Errorf("a backslash in the path")
	case len(n) >= 2 && n[1] == ':':
		return fmt.Errorf("a drive letter")
	}
	for _, r := range n {
		if r == 0 || unicode.IsControl(r) {
			return fmt.Errorf("a control character in the path")
		}
	}
	for _, part := range strings.Split(strings.TrimSuffix(n, "/"), "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("the path is not clean (empty, . or .. part): it would leave the packages directory")
		}
	}
	return nil
}

// wheelInstallPath maps an entry to where a purelib install puts it: NAME.data/purelib/X
// goes to X; every other .data directory installs outside the packages directory.
func wheelInstallPath(n string) (string, error) {
	top, rest, _ := strings.Cut(n, "/")
	if !strings.HasSuffix(top, ".data") {
		return n, nil
	}
	kind, inner, _ := strings.Cut(rest, "/")
	if kind != "purelib" || inner == "" {
		return "", fmt.Errorf("installs into %s (outside the Python packages directory), which the sandbox does not provide", kind)
	}
	return inner, nil
}

// readWheelEntry reads an entry's bytes, never more than limit (nor room), whatever its
// header declares; an entry that inflates beyond maxWheelRatio is refused as a bomb.
func readWheelEntry(f *zip.File, limit, room int64) ([]byte, error) {
	limit = min(limit, room)
	if f.UncompressedSize64 > uint64(limit) {
		return nil, fmt.Errorf("unpacks to %d bytes, over what ceval unpacks (%d per file, %d per wheel)", f.UncompressedSize64, MaxWheelFileBytes, MaxWheelBytes)
	}
	if f.UncompressedSize64 > 1<<20 && f.UncompressedSize64/max(f.CompressedSize64, 1) > maxWheelRatio {
		return nil, fmt.Errorf("inflates %d times (%d bytes to %d): a zip bomb", f.UncompressedSize64/max(f.CompressedSize64, 1), f.CompressedSize64, f.UncompressedSize64)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	body, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit || uint64(len(body)) != f.UncompressedSize64 {
		return nil, fmt.Errorf("unpacks to more bytes than its header declares (%d): a zip bomb", f.UncompressedSize64)
	}
	return body, nil
}

// checkWheelMetadata checks the WHEEL file: a purelib root and py3-none-any tags only.
func checkWheelMetadata(meta []byte) error {
	purelib, tags := false, 0
	sc := bufio.NewScanner(bytes.NewReader(meta))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "Root-Is-Purelib":
			purelib = strings.EqualFold(v, "true")
		case "Tag":
			tags++
			parts := strings.Split(v, "-")
			if len(parts) != 3 || !strings.HasPrefix(parts[0], "py3") || parts[1] != "none" || parts[2] != "any" {
				return fmt.Errorf("tag %q is not pure Python (py3-none-any)", v)
			}
		}
	}
	if !purelib {
		return fmt.Errorf("Root-Is-Purelib is not true: a platform wheel, which the sandbox's CPython cannot load")
	}
	if tags == 0 {
		return fmt.Errorf("no Tag line")
	}
	return nil
}

func isNative(name string) bool {
	for _, s := range nativeSuffixes {
		if strings.HasSuffix(name, s) || strings.Contains(name, s+".") {
			return true
		}
	}
	return false
}

func wheelEntryKind(m fs.FileMode) string {
	if m&fs.ModeSymlink != 0 {
		return "symbolic link"
	}
	return strings.TrimPrefix(fileKind(m), "a ")
}

// mergeWheels is the criterion's python_wheels plus the task's, without repeats.
func mergeWheels(task, crit []*Wheel) []*Wheel {
	out := slices.Clone(crit)
	for _, w := range task {
		if !slices.ContainsFunc(out, func(o *Wheel) bool { return o.SHA256 == w.SHA256 }) {
			out = append(out, w)
		}
	}
	return out
}

// checkWheelPackages refuses a criterion whose wheels install a name its python_packages
// (Debian's) provide too: the two would be merged into one directory of the sandbox.
func (l *loader) checkWheelPackages(t *Task) {
	for i := range t.Criteria {
		e := t.Criteria[i].Execution()
		if e == nil {
			continue
		}
		for _, w := range e.PythonWheels {
			for _, top := range w.Top {
				if slices.Contains(e.PythonPackages, strings.TrimSuffix(top, ".py")) {
					l.errorf(w.node, "python_wheels: %s installs %q, which python_packages also names (success_criteria[%d]): keep one of them", filepath.Base(w.Path), top, i)
					return
				}
			}
		}
	}
}
