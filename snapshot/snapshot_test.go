package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"ceval.dev/ceval/internal/testtree"
	"golang.org/x/sys/unix"
)

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// takeT snapshots src into a fresh "workspace" directory with a deadline, so a Take that
// blocks (on a FIFO, say) fails the test instead of hanging it.
func takeT(t testing.TB, src string, lim Limits) *Snapshot {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "workspace")
	type result struct {
		s   *Snapshot
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := Take(src, dst, lim)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("Take: %v", r.err)
		}
		checkDiskIsPlain(t, r.s)
		return r.s
	case <-time.After(10 * time.Second):
		t.Fatal("Take did not return within 10s")
		return nil
	}
}

// checkDiskIsPlain asserts the snapshot dir holds only regular files and directories with
// no special bits and no group/other write, matching Entries exactly.
func checkDiskIsPlain(t testing.TB, s *Snapshot) {
	t.Helper()
	var onDisk []string
	err := filepath.WalkDir(s.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if p == s.Dir {
			if fi.Mode().Perm() != 0o700 || !fi.IsDir() {
				t.Errorf("snapshot root mode %v, want drwx------", fi.Mode())
			}
			return nil
		}
		rel, _ := filepath.Rel(s.Dir, p)
		onDisk = append(onDisk, filepath.ToSlash(rel))
		if !fi.Mode().IsRegular() && !fi.IsDir() {
			t.Errorf("snapshot holds %s of type %v", rel, fi.Mode().Type())
		}
		if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 || fi.Mode().Perm()&0o022 != 0 {
			t.Errorf("snapshot holds %s with mode %v", rel, fi.Mode())
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Geteuid() {
			t.Errorf("snapshot holds %s owned by uid %d", rel, st.Uid)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range s.Entries {
		if e.Kind == KindDir || e.Kind == KindFile && e.Omitted == "" {
			want = append(want, e.Path)
		}
	}
	slices.Sort(onDisk)
	slices.Sort(want)
	if !slices.Equal(onDisk, want) {
		t.Errorf("snapshot dir holds %q, Entries (without links) say %q", onDisk, want)
	}
}

func noteContaining(t testing.TB, s *Snapshot, rel, substr string) {
	t.Helper()
	n, ok := s.NoteFor(rel)
	if !ok {
		t.Fatalf("no note for %s; notes: %+v", rel, s.Notes)
	}
	if !strings.Contains(n.Reason, substr) {
		t.Fatalf("note for %s is %+v, want it to mention %q", rel, n, substr)
	}
}

func paths(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Path)
	}
	return out
}

// assertLinkNotFollowed checks that rel was recorded as a link to target and that no
// byte behind it is reachable through the snapshot.
func assertLinkNotFollowed(t *testing.T, s *Snapshot, rel, target string) {
	t.Helper()
	e, ok := s.Lookup(rel)
	if !ok || e.Kind != KindSymlink || e.Target != target {
		t.Fatalf("Lookup(%s) = %+v, %v; want symlink to %s", rel, e, ok, target)
	}
	_, err := s.ReadFile(rel)
	if !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), "is a symlink to "+target+"; ceval does not follow links") {
		t.Fatalf("ReadFile(%s) error = %v, want the symlink refusal", rel, err)
	}
	if _, err := os.Lstat(filepath.Join(s.Dir, rel)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s exists on disk in the snapshot (err %v); links must never be recreated", rel, err)
	}
}

func TestSnapshotDoesNotFollowSymlinkToEtcPasswd(t *testing.T) {
	ws := t.TempDir()
	testtree.Write(t, ws, map[string]string{"real.txt": "mine"})
	symlink(t, "/etc/passwd", filepath.Join(ws, "passwd"))
	symlink(t, "real.txt", filepath.Join(ws, "alias"))
	s := takeT(t, ws, Limits{})

	assertLinkNotFollowed(t, s, "passwd", "/etc/passwd")
	assertLinkNotFollowed(t, s, "alias", "real.txt") // even a link that stays inside
	if got := paths(s.Entries); !slices.Equal(got, []string{"alias", "passwd", "real.txt"}) {
		t.Fatalf("entries %q", got)
	}
	if b, err := s.ReadFile("real.txt"); err != nil || string(b) != "mine" {
		t.Fatalf("ReadFile(real.txt) = %q, %v", b, err)
	}
}

func TestSnapshotDoesNotFollowSymlinkToDirectoryOutside(t *testing.T) {
	outside := t.TempDir()
	testtree.Write(t, outside, map[string]string{"secret.txt": "expected output", "deep/key": "k"})
	ws := t.TempDir()
	symlink(t, outside, filepath.Join(ws, "out"))
	s := takeT(t, ws, Limits{})

	assertLinkNotFollowed(t, s, "out", outside)
	for _, rel := range []string{"out/secret.txt", "out/deep/key"} {
		if _, ok := s.Lookup(rel); ok {
			t.Errorf("Lookup(%s) found an entry through the link", rel)
		}
		if _, err := s.ReadFile(rel); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile(%s) error = %v, want not-exist", rel, err)
		}
		noteContaining(t, s, rel, "symlink to "+outside)
	}
	if g := s.Glob("**/secret.txt"); len(g) != 0 {
		t.Errorf("Glob found %q through the link", paths(g))
	}
	if len(s.Entries) != 1 {
		t.Errorf("entries %q, want only the link", paths(s.Entries))
	}
}

func TestSnapshotDoesNotFollowRelativeDotDotLink(t *testing.T) {
	parent := t.TempDir()
	testtree.Write(t, parent, map[string]string{"hidden/tests.py": "assert True", "ws/sub/keep.txt": "k"})
	ws := filepath.Join(parent, "ws")
	symlink(t, "../hidden/tests.py", filepath.Join(ws, "tests.py"))
	symlink(t, "../..", filepath.Join(ws, "sub", "up"))
	symlink(t, "../../../../../../../../etc/passwd", filepath.Join(ws, "sub", "pw"))
	s := takeT(t, ws, Limits{})

	assertLinkNotFollowed(t, s, "tests.py", "../hidden/tests.py")
	assertLinkNotFollowed(t, s, "sub/up", "../..")
	assertLinkNotFollowed(t, s, "sub/pw", "../../../../../../../../etc/passwd")
	if _, ok := s.Lookup("sub/up/hidden/tests.py"); ok {
		t.Fatal("found a file through sub/up")
	}
	want := []string{"sub", "sub/keep.txt", "sub/pw", "sub/up", "tests.py"}
	if got := paths(s.Entries); !slices.Equal(got, want) {
		t.Fatalf("entries %q, want %q", got, want)
	}
}

func TestSnapshotRecordsFIFOWithoutOpeningIt(t *testing.T) {
	ws := t.TempDir()
	testtree.Write(t, ws, map[string]string{"after.txt": "still captured"})
	if err := unix.Mkfifo(filepath.Join(ws, "pipe"), 0o666); err != nil {
		t.Fatal(err)
	}
	// A FIFO with a writer holding it open, too: reading it would block forever.
	if err := unix.Mkfifo(filepath.Join(ws, "pipe2"), 0o666); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(filepath.Join(ws, "pipe2"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	l, err := net.Listen("unix", filepath.Join(ws, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	special := map[string]Kind{"pipe": KindFIFO, "pipe2": KindFIFO, "sock": KindSocket}
	if os.Geteuid() == 0 {
		if err := unix.Mknod(filepath.Join(ws, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err == nil {
			special["null"] = KindCharDevice
		}
	}

	start := time.Now()
	s := takeT(t, ws, Limits{})
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Take took %v", d)
	}
	for rel, kind := range special {
		// Visible with its real name and type, so "test ! -e pipe" cannot pass; never read.
		if e, ok := s.Lookup(rel); !ok || e.Kind != kind || e.Omitted == "" {
			t.Errorf("%s: entry %+v, %v; want an omitted %s", rel, e, ok, kind)
		}
		if _, err := s.ReadFile(rel); !errors.Is(err, ErrOmitted) {
			t.Errorf("ReadFile(%s) error = %v, want ErrOmitted", rel, err)
		}
	}
	if b, err := s.ReadFile("after.txt"); err != nil || string(b) != "still captured" {
		t.Fatalf("ReadFile(after.txt) = %q, %v", b, err)
	}
}

func TestSnapshotCopiesHardLinkBytesNotLink(t *testing.T) {
	outside := t.TempDir()
	orig := filepath.Join(outside, "answers.json")
	if err := os.WriteFile(orig, []byte(`{"answer": 42}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := os.Link(orig, filepath.Join(ws, "hl")); err != nil {
		t.Fatal(err)
	}
	s := takeT(t, ws, Limits{})

	var so, sc unix.Stat_t
	if err := unix.Stat(orig, &so); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lstat(filepath.Join(s.Dir, "hl"), &sc); err != nil {
		t.Fatal(err)
	}
	if so.Ino == sc.Ino && so.Dev == sc.Dev {
		t.Fatal("the copy is the original's inode")
	}
	if sc.Nlink != 1 {
		t.Fatalf("the copy has %d links, want 1", sc.Nlink)
	}
	// Rewrite the original in place (same inode the workspace link points at).
	f, err := os.OpenFile(orig, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(`{"answer": 43}`), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, err := s.ReadFile("hl"); err != nil || string(b) != `{"answer": 42}` {
		t.Fatalf("copy reads %q, %v after the original changed", b, err)
	}
}

func TestSnapshotOversizeFileStaysVisible(t *testing.T) {
	ws := t.TempDir()
	sparse := func(name string, size int64) {
		f, err := os.Create(filepath.Join(ws, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
	}
	sparse("at-cap.bin", 16<<20)
	sparse("over-cap.bin", 16<<20+1)
	sparse("sparse-10g.bin", 10<<30)
	testtree.Write(t, ws, map[string]string{"small.txt": "ok"})

	start := time.Now()
	s := takeT(t, ws, Limits{})
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Take took %v; a huge file must be refused by its size, never read", d)
	}
	if s.Truncated {
		t.Fatal("a file over the per-file cap must not stop the snapshot")
	}
	tests := []struct {
		rel     string
		size    int64
		omitted string
	}{
		{"at-cap.bin", 16 << 20, ""},
		{"over-cap.bin", 16<<20 + 1, "over the 16 MiB per-file cap (file is 16.0 MiB); left out"},
		{"sparse-10g.bin", 10 << 30, "over the 16 MiB per-file cap (file is 10 GiB); left out"},
		{"small.txt", 2, ""},
	}
	for _, tt := range tests {
		// Left out or not, the file stays visible with its real name, type and size.
		e, ok := s.Lookup(tt.rel)
		if !ok || e.Kind != KindFile || e.Size != tt.size || e.Omitted != tt.omitted {
			t.Errorf("Lookup(%s) = %+v, %v; want a file of %d bytes omitted %q", tt.rel, e, ok, tt.size, tt.omitted)
		}
		_, err := s.ReadFile(tt.rel)
		if (tt.omitted != "") != errors.Is(err, ErrOmitted) {
			t.Errorf("ReadFile(%s) error = %v", tt.rel, err)
		}
	}
	if s.Bytes != 16<<20+2 {
		t.Errorf("Bytes = %d", s.Bytes)
	}
	if len(s.LimitsHit) != 1 || !strings.Contains(s.LimitsHit[0], "per-file cap 16 MiB: 2 file(s) omitted") {
		t.Errorf("LimitsHit = %q", s.LimitsHit)
	}
}

func TestSnapshotLeavesOutFileGrowingPastCapWhileCopied(t *testing.T) {
	ws := t.TempDir()
	testtree.Write(t, ws, map[string]string{"grows.log": "small at fstat", "z.txt": "z"})
	testHook = func(at string, dirFD int, name string) {
		if at != "fstat" || name != "grows.log" {
			return
		}
		fd, err := unix.Openat(dirFD, name, unix.O_WRONLY|unix.O_APPEND, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer unix.Close(fd)
		unix.Write(fd, bytes.Repeat([]byte("x"), 4096))
	}
	defer func() { testHook = nil }()
	s := takeT(t, ws, Limits{MaxFileBytes: 1024})
	if e, ok := s.Lookup("grows.log"); !ok || !strings.Contains(e.Omitted, "1 KiB per-file cap (grew while being copied)") {
		t.Fatalf("a file that grew past the cap while copied: entry %+v, %v; want it omitted", e, ok)
	}
	if _, ok := s.Lookup("z.txt"); !ok || s.Truncated {
		t.Fatal("the snapshot should go on after a file that grew")
	}
}

func TestSnapshotStopsAtEntryCap(t *testing.T) {
	tests := []struct {
		name      string
		files     int
		cap       int
		truncated bool
	}{
		{"exactly at cap", 10, 10, false},
		{"one over cap", 11, 10, true},
		{"far over cap", 500, 10, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			files := map[string]string{}
			for i := range tt.files {
				files[fmt.Sprintf("f%03d", i)] = "f"
			}
			testtree.Write(t, ws, files)
			s := takeT(t, ws, Limits{MaxEntries: tt.cap})
			if s.Truncated != tt.truncated {
				t.Fatalf("Truncated = %v", s.Truncated)
			}
			if len(s.Entries) > tt.cap {
				t.Fatalf("%d entries over the cap %d", len(s.Entries), tt.cap)
			}
			if !tt.truncated {
				if len(s.Entries) != tt.files || len(s.Notes) != 0 {
					t.Fatalf("%d entries, notes %+v", len(s.Entries), s.Notes)
				}
				return
			}
			if got := paths(s.Entries); got[0] != "f000" || got[9] != "f009" {
				t.Fatalf("entries %q, want the first ten in order", got)
			}
			// The root's listing was cut: what it did not reach may exist, never absent.
			if s.RootOmitted == "" {
				t.Fatal("the root's listing was cut but RootOmitted is empty")
			}
			if n, ok := s.Unvouched(fmt.Sprintf("f%03d", tt.files-1)); !ok || n.Path != "." {
				t.Fatalf("Unvouched(last file) = %+v, %v", n, ok)
			}
			if _, err := s.ReadFile("credentials.txt"); !errors.Is(err, ErrOmitted) {
				t.Fatalf("ReadFile of a name the cut listing may hold: %v, want ErrOmitted", err)
			}
			last := s.Notes[len(s.Notes)-1]
			if last.Reason != "entry cap 10 reached; snapshot stopped" {
				t.Fatalf("last note %+v", last)
			}
			// Something never reached explains itself with the stop note.
			noteContaining(t, s, fmt.Sprintf("f%03d", tt.files-1), "entry cap 10 reached")
		})
	}
}

func TestSnapshotTotalBytesCapOmitsButGoesOn(t *testing.T) {
	ws := t.TempDir()
	chunk := strings.Repeat("b", 300)
	testtree.Write(t, ws, map[string]string{"a": chunk, "b": chunk, "c": chunk, "d": chunk, "e": "tiny"})
	s := takeT(t, ws, Limits{MaxTotalBytes: 1000})
	if s.Truncated || s.Bytes != 904 {
		t.Fatalf("Truncated = %v, Bytes = %d; want false, 904", s.Truncated, s.Bytes)
	}
	if got := paths(s.Entries); !slices.Equal(got, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("entries %q", got)
	}
	if e, _ := s.Lookup("d"); e.Size != 300 || !strings.Contains(e.Omitted, "over the 1000 bytes total cap") {
		t.Fatalf("d = %+v, want omitted at its real size", e)
	}
	if len(s.LimitsHit) != 1 || !strings.Contains(s.LimitsHit[0], "total cap 1000 bytes: 1 file(s) omitted") {
		t.Fatalf("LimitsHit = %q", s.LimitsHit)
	}
}

func TestSnapshotEntryCapHidesNoFile(t *testing.T) {
	ws := t.TempDir()
	// The cap falls inside a/big; a/zz and credentials.txt come after it in walk order.
	files := map[string]string{"a/zz.txt": "TODO", "credentials.txt": "secret", "0first.txt": "x"}
	for i := range 20 {
		files[fmt.Sprintf("a/big/f%02d", i)] = "x"
	}
	testtree.Write(t, ws, files)
	s := takeT(t, ws, Limits{MaxEntries: 10})
	if !s.Truncated {
		t.Fatal("the entry cap was not reached")
	}
	for rel, want := range map[string]string{"a/big/f19": "a/big", "a/zz.txt": "a", "credentials.txt": ".", "a/big/new/x": "a/big"} {
		if n, ok := s.Unvouched(rel); !ok || n.Path != want {
			t.Errorf("Unvouched(%s) = %+v, %v; want directory %s", rel, n, ok, want)
		}
	}
	// A directory whose listing was complete still vouches for absence.
	if n, ok := s.Unvouched("0first.txt/x"); ok {
		t.Errorf("Unvouched below a captured file = %+v", n)
	}
	if len(s.LimitsHit) != 1 || !strings.Contains(s.LimitsHit[0], "entry cap 10: stopped at") {
		t.Errorf("LimitsHit = %q", s.LimitsHit)
	}
}

// pathShape builds depth nested directories with 255-byte names and files 255-byte names
// at the bottom, through directory descriptors so no path ever reaches PATH_MAX, and
// returns the summed length of the paths the workspace holds.
func pathShape(t testing.TB, root string, depth, files int) int64 {
	t.Helper()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	name := func(c byte, i int) string {
		s := fmt.Sprintf("%d", i)
		return strings.Repeat(string(c), 255-len(s)) + s
	}
	var total int64
	plen := int64(0)
	for i := range depth {
		n := name('d', i)
		if err := unix.Mkdirat(fd, n, 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
		plen += 256
		total += plen - 1
	}
	defer unix.Close(fd)
	for i := range files {
		f, err := unix.Openat(fd, name('f', i), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(f)
		total += plen + 255
	}
	return total
}

func TestSnapshotPathCapBoundsPathShape(t *testing.T) {
	ws := t.TempDir()
	total := pathShape(t, ws, 40, 300) // 3 MiB of paths in 340 entries
	// Not takeT: its check of the copy walks paths past PATH_MAX.
	s, err := Take(ws, filepath.Join(t.TempDir(), "workspace"), Limits{MaxPathBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Truncated || total <= 1<<20 {
		t.Fatalf("Truncated = %v with %d path bytes; want the 1 MiB path cap reached", s.Truncated, total)
	}
	var got int64
	for _, e := range s.Entries {
		got += int64(len(e.Path))
	}
	if got > 1<<20 {
		t.Fatalf("entries hold %d path bytes, over the 1 MiB cap", got)
	}
	// The files beyond the cap may exist: the bottom directory's listing is incomplete.
	last := s.Entries[len(s.Entries)-1].Path
	bottom := last[:strings.LastIndexByte(last, '/')]
	if n, ok := s.Unvouched(bottom + "/credentials.txt"); !ok || n.Path != bottom {
		t.Fatalf("Unvouched below the cut = %+v, %v", n, ok)
	}
	if len(s.LimitsHit) != 1 || !strings.Contains(s.LimitsHit[0], "path cap 1 MiB") {
		t.Fatalf("LimitsHit = %q", s.LimitsHit)
	}
}

// nest makes depth directories named "d" under root and a file at the bottom, returning
// the file's relative path.
func nest(t testing.TB, root string, depth int) string {
	t.Helper()
	rel := strings.TrimSuffix(strings.Repeat("d/", depth), "/")
	if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
		t.Fatal(err)
	}
	file := rel + "/bottom.txt"
	if err := os.WriteFile(filepath.Join(root, file), []byte("deep"), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestSnapshotDeepTreeStopsAtDepth(t *testing.T) {
	ws := t.TempDir()
	bottom := nest(t, ws, 70)
	s := takeT(t, ws, Limits{})
	capDir := strings.TrimSuffix(strings.Repeat("d/", 64), "/")
	if _, ok := s.Lookup(capDir); !ok {
		t.Fatal("the directory at depth 64 should be captured")
	}
	if _, ok := s.Lookup(capDir + "/d"); ok {
		t.Fatal("an entry at depth 65 was captured")
	}
	for _, e := range s.Entries {
		if n := strings.Count(e.Path, "/") + 1; n > 64 {
			t.Fatalf("entry %s at depth %d", e.Path, n)
		}
	}
	n, ok := s.NoteFor(bottom)
	if !ok || n.Path != capDir || !strings.Contains(n.Reason, "depth cap 64") {
		t.Fatalf("NoteFor(bottom) = %+v, %v", n, ok)
	}
	// Below the cap nothing looks absent: "test ! -e" of any name there cannot pass.
	for _, rel := range []string{bottom, capDir + "/credentials.txt"} {
		if n, ok := s.Unvouched(rel); !ok || n.Path != capDir {
			t.Fatalf("Unvouched(%s) = %+v, %v; want the depth-capped directory", rel, n, ok)
		}
	}
	if len(s.LimitsHit) != 1 || !strings.Contains(s.LimitsHit[0], "depth cap 64: 1 directory(ies) not listed") {
		t.Fatalf("LimitsHit = %q", s.LimitsHit)
	}
	if s.Truncated {
		t.Fatal("the depth cap must not stop the snapshot")
	}
}

func TestSnapshotThousandDeepTreeIsQuick(t *testing.T) {
	ws := t.TempDir()
	bottom := nest(t, ws, 1000)
	for _, lim := range []Limits{{}, {MaxDepth: 2000}} {
		start := time.Now()
		s := takeT(t, ws, lim)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("Take(%+v) took %v", lim, d)
		}
		_, ok := s.Lookup(bottom)
		if ok != (lim.MaxDepth == 2000) {
			t.Fatalf("limits %+v: bottom captured = %v", lim, ok)
		}
		if ok {
			if b, err := s.ReadFile(bottom); err != nil || string(b) != "deep" {
				t.Fatalf("ReadFile(bottom) = %q, %v", b, err)
			}
		}
	}
}

func TestSnapshotDropsSetuidBits(t *testing.T) {
	ws := t.TempDir()
	testtree.Write(t, ws, map[string]string{"suid": "#!/bin/sh", "sgid": "x", "shared": "x", "private": "x", "sticky/f": "x"})
	for name, mode := range map[string]uint32{"suid": 0o4755, "sgid": 0o2775, "shared": 0o666, "private": 0o600, "sticky": 0o1777} {
		if err := unix.Chmod(filepath.Join(ws, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	s := takeT(t, ws, Limits{})
	want := map[string]fs.FileMode{"suid": 0o755, "sgid": 0o755, "shared": 0o644, "private": 0o644, "sticky": 0o755, "sticky/f": 0o644}
	for rel, mode := range want {
		e, ok := s.Lookup(rel)
		if !ok || e.Mode != mode {
			t.Errorf("%s: entry %+v, want mode %v", rel, e, mode)
		}
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(s.Dir, rel), &st); err != nil {
			t.Fatal(err)
		}
		if st.Mode&0o7777 != uint32(mode) {
			t.Errorf("%s on disk has mode %#o, want %#o", rel, st.Mode&0o7777, mode)
		}
	}
}

// withoutDACOverride runs f on a thread that has dropped CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH from its effective set, so a root test sees permission bits the way
// a rootless ceval would. Capabilities are per thread on Linux; Take starts no goroutines.
func withoutDACOverride(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		f()
		return
	}
	runtime.LockOSThread()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var saved [2]unix.CapUserData
	if err := unix.Capget(&hdr, &saved[0]); err != nil {
		runtime.UnlockOSThread()
		t.Skipf("capget: %v", err)
	}
	dropped := saved
	dropped[0].Effective &^= 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH
	if err := unix.Capset(&hdr, &dropped[0]); err != nil {
		runtime.UnlockOSThread()
		t.Skipf("capset: %v", err)
	}
	f()
	if err := unix.Capset(&hdr, &saved[0]); err != nil {
		t.Fatalf("restoring capabilities: %v", err) // the thread stays locked and dies with the goroutine
	}
	runtime.UnlockOSThread()
}

func TestSnapshotUnreadableFileIsNoted(t *testing.T) {
	ws := t.TempDir()
	testtree.Write(t, ws, map[string]string{
		"locked.txt":        "secret",
		"closed/inner.txt":  "x",
		"noexec/inner.txt":  "x",
		"noread/inner.txt":  "x",
		"readable.txt":      "fine",
		"zz-after/last.txt": "still captured",
	})
	for name, mode := range map[string]uint32{"locked.txt": 0, "closed": 0, "noexec": 0o644, "noread": 0o311} {
		if err := unix.Chmod(filepath.Join(ws, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, d := range []string{"closed", "noexec", "noread"} {
			os.Chmod(filepath.Join(ws, d), 0o755)
		}
	})
	dst := filepath.Join(t.TempDir(), "workspace")
	var s *Snapshot
	var err error
	withoutDACOverride(t, func() {
		// Confirm the simulation bites before trusting the result.
		if fd, oerr := unix.Open(filepath.Join(ws, "locked.txt"), unix.O_RDONLY, 0); oerr == nil {
			unix.Close(fd)
			return
		}
		s, err = Take(ws, dst, Limits{})
	})
	if s == nil && err == nil {
		t.Skip("cannot make a file unreadable to this process")
	}
	if err != nil {
		t.Fatalf("Take: %v (a permission problem must be a note, not an error)", err)
	}
	checkDiskIsPlain(t, s)
	// Unreadable entries stay visible, omitted; what is below an unlistable directory is
	// unvouched, never absent.
	for rel, kind := range map[string]Kind{"locked.txt": KindFile, "closed": KindDir, "noread": KindDir} {
		if e, ok := s.Lookup(rel); !ok || e.Kind != kind || !strings.Contains(e.Omitted, "permission denied") {
			t.Errorf("%s: entry %+v, %v; want an omitted %s", rel, e, ok, kind)
		}
	}
	for _, rel := range []string{"closed/inner.txt", "noexec/inner.txt", "noread/inner.txt"} {
		if _, ok := s.Unvouched(rel); !ok {
			t.Errorf("%s looks absent; notes %+v", rel, s.Notes)
		}
	}
	for _, rel := range []string{"readable.txt", "zz-after/last.txt", "noexec"} {
		if _, ok := s.Lookup(rel); !ok {
			t.Errorf("%s missing; notes %+v", rel, s.Notes)
		}
	}
}

func TestSnapshotSwapAfterLstat(t *testing.T) {
	outside := t.TempDir()
	testtree.Write(t, outside, map[string]string{"secret.txt": "hidden"})
	tests := []struct {
		name   string
		victim string // created as a regular file, or a directory when it ends in "/"
		swap   func(t *testing.T, path string)
		reason string
	}{
		{"file becomes symlink to /etc/passwd", "victim", func(t *testing.T, p string) {
			os.Remove(p)
			symlink(t, "/etc/passwd", p)
		}, "replaced by a symlink during the snapshot"},
		{"file becomes fifo", "victim", func(t *testing.T, p string) {
			os.Remove(p)
			if err := unix.Mkfifo(p, 0o666); err != nil {
				t.Fatal(err)
			}
		}, "changed from a regular file to a fifo"},
		{"file becomes directory", "victim", func(t *testing.T, p string) {
			os.Remove(p)
			testtree.Write(t, p, map[string]string{"x": "x"})
		}, "changed from a regular file to a directory"},
		{"file vanishes", "victim", func(t *testing.T, p string) {
			os.Remove(p)
		}, "vanished during the snapshot"},
		{"directory becomes symlink to outside dir", "victim/", func(t *testing.T, p string) {
			os.RemoveAll(p)
			symlink(t, outside, p)
		}, "replaced by a symlink during the snapshot"},
		{"directory becomes file", "victim/", func(t *testing.T, p string) {
			os.RemoveAll(p)
			testtree.Write(t, filepath.Dir(p), map[string]string{filepath.Base(p): "x"})
		}, "changed type during the snapshot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			if strings.HasSuffix(tt.victim, "/") {
				testtree.Write(t, ws, map[string]string{tt.victim + "secret.txt": "x"})
			} else {
				testtree.Write(t, ws, map[string]string{tt.victim: "innocent"})
			}
			testtree.Write(t, ws, map[string]string{"zz.txt": "after"})
			name := strings.TrimSuffix(tt.victim, "/")
			swapped := false
			testHook = func(at string, dirFD int, n string) {
				if at == "lstat" && n == name && !swapped {
					swapped = true
					tt.swap(t, filepath.Join(ws, name))
				}
			}
			defer func() { testHook = nil }()
			s := takeT(t, ws, Limits{})
			if !swapped {
				t.Fatal("hook never ran")
			}
			if _, ok := s.Lookup(name); ok {
				t.Fatalf("%s captured after the swap: %+v", name, s.Entries)
			}
			if _, ok := s.Lookup(name + "/secret.txt"); ok {
				t.Fatal("followed the swapped-in link")
			}
			noteContaining(t, s, name, tt.reason)
			if _, ok := s.Lookup("zz.txt"); !ok {
				t.Fatal("the snapshot should go on after a swap")
			}
		})
	}
}

func TestSnapshotSkipsNonUTF8Name(t *testing.T) {
	ws := t.TempDir()
	testtree.Write(t, ws, map[string]string{"bad\xffname": "x", "good": "y"})
	s := takeT(t, ws, Limits{})
	if got := paths(s.Entries); !slices.Equal(got, []string{"good"}) {
		t.Fatalf("entries %q", got)
	}
	if len(s.Notes) != 2 || !strings.Contains(s.Notes[0].Reason, `"bad\xffname" is not valid UTF-8`) {
		t.Fatalf("notes %+v", s.Notes)
	}
	// grep -r must not pass over a file it cannot name: the root's listing is incomplete.
	if !strings.Contains(s.RootOmitted, "not valid UTF-8") {
		t.Fatalf("RootOmitted = %q", s.RootOmitted)
	}
}

func TestTakeRefusesBadRootsAndExistingDst(t *testing.T) {
	dir := t.TempDir()
	testtree.Write(t, dir, map[string]string{"ws/a": "a", "file": "f"})
	symlink(t, filepath.Join(dir, "ws"), filepath.Join(dir, "link"))
	tests := []struct {
		name, src, dst, want string
	}{
		{"missing src", filepath.Join(dir, "nope"), filepath.Join(dir, "s1"), "no such file"},
		{"src is a file", filepath.Join(dir, "file"), filepath.Join(dir, "s2"), "not a directory"},
		{"src is a symlink", filepath.Join(dir, "link"), filepath.Join(dir, "s3"), "is a symlink"},
		{"dst exists", filepath.Join(dir, "ws"), filepath.Join(dir, "ws"), "exists"},
		{"dst parent missing", filepath.Join(dir, "ws"), filepath.Join(dir, "no", "s4"), "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Take(tt.src, tt.dst, Limits{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Take = %v, %v; want error mentioning %q", s, err, tt.want)
			}
		})
	}
	if _, err := Take(filepath.Join(dir, "ws"), filepath.Join(dir, "s5"), Limits{MaxDepth: -1}); err == nil {
		t.Fatal("negative limits accepted")
	}
}

func TestHuman(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1: "1 byte", 1000: "1000 bytes", 1536: "1.5 KiB", 16 << 20: "16 MiB", 10 << 30: "10 GiB"} {
		if got := human(n); got != want {
			t.Errorf("human(%d) = %q, want %q", n, got, want)
		}
	}
}
