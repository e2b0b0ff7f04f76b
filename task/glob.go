package task

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// Bounds of an experiment's tasks list, so a glob cannot make validate read the disk.
const (
	MaxTaskFiles = 10000 // task files an experiment may name, all its globs together
	// maxGlobEntries bounds the directory entries the globs of one experiment read.
	maxGlobEntries = 200000
	// globTimeout bounds the wall time of expanding them (a slow or hung filesystem).
	globTimeout = 5 * time.Second
	// maxExperimentBytes bounds the bytes of all task files of one experiment together.
	maxExperimentBytes = 64 << 20
)

// globber expands the tasks list's patterns inside the experiment's root, through the root
// only: a pattern with ".." or absolute is refused before anything is read, and a symlink
// that leaves the root (rootlink -> /) is refused when the glob reaches it.
type globber struct {
	root       *os.Root
	deadline   time.Time
	maxEntries int // directory entries the globs may read
	entries    int // read so far
	matches    int
}

// globBoundError says which bound of the globber was passed.
type globBoundError struct{ msg string }

func (e *globBoundError) Error() string { return e.msg }

// checkPattern refuses a pattern that could name anything outside the root, lexically.
func checkPattern(p string) string {
	switch {
	case p == "":
		return "must not be empty"
	case strings.HasPrefix(p, "/"):
		return fmt.Sprintf("%q is absolute; task paths are relative to the experiment file's directory and stay inside it", p)
	case strings.ContainsRune(p, 0):
		return fmt.Sprintf("%q holds a NUL byte", p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return fmt.Sprintf("%q leaves the experiment file's directory (\"..\"); keep the experiment file at the top of its tasks (or beside them)", p)
		}
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Sprintf("bad glob %q: %v", p, err)
	}
	return ""
}

// glob returns the root-relative paths pattern matches, sorted; pattern passed checkPattern.
// An entry the pattern walks through must be a directory inside the root.
func (g *globber) glob(pattern string) ([]string, error) {
	parts := strings.Split(path.Clean(pattern), "/")
	dirs := []string{"."}
	for i, part := range parts {
		last := i == len(parts)-1
		var next []string
		for _, dir := range dirs {
			names, err := g.match(dir, part)
			if err != nil {
				return nil, err
			}
			for _, name := range names {
				p := path.Join(dir, name)
				if !last {
					fi, err := g.root.Stat(p) // follows links inside the root only
					if err != nil {
						if errors.Is(err, fs.ErrNotExist) {
							continue
						}
						return nil, g.describe(p, err)
					}
					if !fi.IsDir() {
						continue
					}
				}
				next = append(next, p)
			}
		}
		dirs = next
	}
	sort.Strings(dirs)
	g.matches += len(dirs)
	if g.matches > MaxTaskFiles {
		return nil, &globBoundError{fmt.Sprintf("the tasks list names more than %d files", MaxTaskFiles)}
	}
	return dirs, nil
}

// match returns the names in dir matching part: the name itself when part has no glob
// characters (checked when used), else the entries read through the root, counted.
func (g *globber) match(dir, part string) ([]string, error) {
	if !strings.ContainsAny(part, `*?[\`) {
		return []string{part}, nil
	}
	f, err := g.root.Open(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, g.describe(dir, err)
	}
	defer f.Close()
	var out []string
	for {
		if time.Now().After(g.deadline) {
			return nil, &globBoundError{fmt.Sprintf("expanding the tasks list took longer than %s", globTimeout)}
		}
		ents, err := f.ReadDir(256)
		for _, e := range ents {
			if ok, _ := path.Match(part, e.Name()); ok {
				out = append(out, e.Name())
			}
		}
		g.entries += len(ents)
		if g.entries > g.maxEntries {
			return nil, &globBoundError{fmt.Sprintf("the tasks list's globs read more than %d directory entries; name the task files more precisely", g.maxEntries)}
		}
		if len(out) > MaxTaskFiles {
			return nil, &globBoundError{fmt.Sprintf("the tasks list names more than %d files", MaxTaskFiles)}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(ents) == 0) {
			sort.Strings(out) // a walk in directory order would report problems in a random order
			return out, nil
		}
		if err != nil {
			return nil, g.describe(dir, err)
		}
	}
}

// describe turns a root error into a message that names the root-relative path only.
func (g *globber) describe(p string, err error) error {
	if strings.Contains(err.Error(), "escapes") { // os.Root's escape error is not exported
		return fmt.Errorf("%q is a symlink that leaves the experiment file's directory", p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%q: %v", p, pe.Err)
	}
	return err
}
