package worker

import (
	"io/fs"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

func viewFS(t *testing.T) *memFS {
	t.Helper()
	m := newMemFS(2, false)
	for _, p := range []struct {
		name   string
		mode   fs.FileMode
		data   string
		target string
	}{
		{"a.txt", 0o644, "alpha", ""},
		{"d/b.txt", 0o755, "beta", ""},
		{"link", fs.ModeSymlink | 0o777, "", "/etc/passwd"},
		{"dlink", fs.ModeSymlink | 0o777, "", "d"},
	} {
		if err := m.put(p.name, p.mode, []byte(p.data), p.target); err != nil {
			t.Fatal(err)
		}
	}
	m.readOnly = true
	return m
}

func TestMemFSReadOnlyViewRefusesEveryWrite(t *testing.T) {
	m := viewFS(t)
	for name, errno := range map[string]experimentalsys.Errno{
		"create": func() experimentalsys.Errno {
			_, e := m.OpenFile("new", experimentalsys.O_CREAT|experimentalsys.O_WRONLY, 0o644)
			return e
		}(),
		"write": func() experimentalsys.Errno { _, e := m.OpenFile("a.txt", experimentalsys.O_RDWR, 0); return e }(),
		"trunc": func() experimentalsys.Errno {
			_, e := m.OpenFile("a.txt", experimentalsys.O_WRONLY|experimentalsys.O_TRUNC, 0)
			return e
		}(),
		"mkdir":   m.Mkdir("x", 0o755),
		"chmod":   m.Chmod("a.txt", 0o777),
		"rename":  m.Rename("a.txt", "b.txt"),
		"unlink":  m.Unlink("a.txt"),
		"rmdir":   m.Rmdir("d"),
		"link":    m.Link("a.txt", "c.txt"),
		"symlink": m.Symlink("/etc/passwd", "l2"),
		"utimens": m.Utimens("a.txt", 0, 0),
	} {
		if errno != experimentalsys.EROFS {
			t.Errorf("%s: errno %v, want EROFS", name, errno)
		}
	}
	f, errno := m.OpenFile("a.txt", experimentalsys.O_RDONLY, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	if _, errno := f.Write([]byte("x")); errno != experimentalsys.EBADF {
		t.Errorf("write to a read-only open: %v, want EBADF", errno)
	}
}

func TestMemFSNeverFollowsALink(t *testing.T) {
	m := viewFS(t)
	for _, p := range []string{"link", "dlink/b.txt", "dlink"} {
		if _, errno := m.OpenFile(p, experimentalsys.O_RDONLY, 0); errno == 0 {
			t.Errorf("open %s followed a link", p)
		}
		if _, errno := m.Stat(p); errno == 0 {
			t.Errorf("stat %s followed a link", p)
		}
	}
	if _, errno := m.OpenFile("link", experimentalsys.O_RDONLY|experimentalsys.O_NOFOLLOW, 0); errno != experimentalsys.ELOOP {
		t.Errorf("open link O_NOFOLLOW: %v, want ELOOP", errno)
	}
	if st, errno := m.Lstat("link"); errno != 0 || st.Mode&fs.ModeSymlink == 0 {
		t.Errorf("lstat link: %v %v; want a symlink", st.Mode, errno)
	}
	if target, errno := m.Readlink("link"); errno != 0 || target != "/etc/passwd" {
		t.Errorf("readlink = %q %v", target, errno)
	}
}

func TestMemFSDotDotStopsAtItsRoot(t *testing.T) {
	m := viewFS(t)
	for _, p := range []string{"../a.txt", "../../../a.txt", "d/../../a.txt", "/a.txt", "./d/../a.txt"} {
		f, errno := m.OpenFile(p, experimentalsys.O_RDONLY, 0)
		if errno != 0 {
			t.Errorf("open %q: %v; want the view's own a.txt", p, errno)
			continue
		}
		buf := make([]byte, 16)
		n, _ := f.Read(buf)
		if string(buf[:n]) != "alpha" {
			t.Errorf("open %q read %q", p, buf[:n])
		}
	}
}

func TestMemFSTmpCapsBytesAndNodes(t *testing.T) {
	m := newTmpFS(4, 1000)
	f, errno := m.OpenFile("f", experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o644)
	if errno != 0 {
		t.Fatal(errno)
	}
	if n, errno := f.Write(make([]byte, 600)); errno != 0 || n != 600 {
		t.Fatalf("write 600: %d %v", n, errno)
	}
	if _, errno := f.Write(make([]byte, 600)); errno != experimentalsys.EIO || !m.Full() {
		t.Errorf("write past the cap: %v, full %v; want EIO and full", errno, m.Full())
	}
	if _, errno := f.Pwrite([]byte("x"), 1<<40); errno != experimentalsys.EIO {
		t.Errorf("sparse write far past the cap: %v, want EIO", errno)
	}
	// Removing the file gives its room back.
	if errno := m.Unlink("f"); errno != 0 {
		t.Fatal(errno)
	}
	g, _ := m.OpenFile("g", experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o644)
	if n, errno := g.Write(make([]byte, 900)); errno != 0 || n != 900 {
		t.Errorf("write after unlink: %d %v", n, errno)
	}

	n := newTmpFS(5, 1<<20)
	n.maxNodes = 3
	for i, name := range []string{"a", "b", "c"} {
		errno := n.Mkdir(name, 0o755)
		if want := i < 2; (errno == 0) != want {
			t.Errorf("mkdir %s (node %d of cap 3): %v", name, i+2, errno)
		}
	}
}

func TestMemFSRenameKeepsTheTreeSound(t *testing.T) {
	m := newTmpFS(4, 1<<20)
	for _, d := range []string{"a", "a/b"} {
		if errno := m.Mkdir(d, 0o755); errno != 0 {
			t.Fatal(errno)
		}
	}
	if errno := m.Rename("a", "a/b/c"); errno != experimentalsys.EINVAL {
		t.Errorf("rename a dir into itself: %v, want EINVAL", errno)
	}
	f, _ := m.OpenFile("x", experimentalsys.O_CREAT|experimentalsys.O_WRONLY, 0o644)
	f.Write([]byte("x"))
	if errno := m.Rename("x", "a"); errno != experimentalsys.EISDIR {
		t.Errorf("rename a file over a dir: %v, want EISDIR", errno)
	}
	if errno := m.Rename("x", "a/b/y"); errno != 0 {
		t.Errorf("rename: %v", errno)
	}
	if _, errno := m.Stat("a/b/y"); errno != 0 {
		t.Errorf("renamed file missing: %v", errno)
	}
	if errno := m.Rmdir("a"); errno != experimentalsys.ENOTEMPTY {
		t.Errorf("rmdir non-empty: %v", errno)
	}
}

func TestMemFSOmittedContentIsVisibleButNeverReadAsAbsent(t *testing.T) {
	m := newMemFS(2, false)
	if err := m.put("d/kept.txt", 0o644, []byte("kept"), ""); err != nil {
		t.Fatal(err)
	}
	if err := m.putOmitted("big.txt", 0o644, 20<<20, "over the 16 MiB per-file cap"); err != nil {
		t.Fatal(err)
	}
	if err := m.markIncomplete("d", "listing cut: entry cap 3 reached"); err != nil {
		t.Fatal(err)
	}
	m.readOnly = true

	// Visible with its real size; a complete directory still says what is absent.
	if st, errno := m.Stat("big.txt"); errno != 0 || st.Size != 20<<20 || !st.Mode.IsRegular() {
		t.Fatalf("Stat(big.txt) = %+v, %v", st, errno)
	}
	if _, errno := m.Stat("nothing"); errno != experimentalsys.ENOENT {
		t.Fatalf("Stat(nothing) below a complete root = %v, want ENOENT", errno)
	}
	if m.Touched() != "" {
		t.Fatalf("Touched = %q before any omitted content was reached", m.Touched())
	}
	// Each way of reaching omitted content fails with EIO and is recorded.
	for name, reach := range map[string]func() experimentalsys.Errno{
		"read an omitted file": func() experimentalsys.Errno {
			f, errno := m.OpenFile("big.txt", experimentalsys.O_RDONLY, 0)
			if errno != 0 {
				return errno
			}
			_, errno = f.Read(make([]byte, 10))
			return errno
		},
		"list a cut directory": func() experimentalsys.Errno {
			f, errno := m.OpenFile("d", experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0)
			if errno != 0 {
				return errno
			}
			_, errno = f.Readdir(-1)
			return errno
		},
		"stat a name a cut directory may hold": func() experimentalsys.Errno { _, errno := m.Stat("d/credentials.txt"); return errno },
		"lstat below it":                       func() experimentalsys.Errno { _, errno := m.Lstat("d/x/y"); return errno },
	} {
		m.ResetTouched()
		if errno := reach(); errno != experimentalsys.EIO {
			t.Errorf("%s: errno %v, want EIO", name, errno)
		}
		if m.Touched() == "" {
			t.Errorf("%s: not recorded as touched", name)
		}
	}
	m.ResetTouched()
	if _, errno := m.Stat("d/kept.txt"); errno != 0 || m.Touched() != "" {
		t.Fatalf("Stat(d/kept.txt) = %v, touched %q: what was captured reads as usual", errno, m.Touched())
	}
}
