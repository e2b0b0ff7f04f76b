package tempdir

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// readOnlyTree makes dir/a/b/c with files, every directory read-only (0555), as the
// supervisor leaves a run's copy of a plugin tree.
func readOnlyTree(t *testing.T, dir string) {
	t.Helper()
	deep := filepath.Join(dir, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{deep, filepath.Dir(deep), filepath.Dir(filepath.Dir(deep))} {
		os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o444)
	}
	for _, d := range []string{deep, filepath.Dir(deep), filepath.Dir(filepath.Dir(deep))} {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
}

// The helper half of TestRemoveTreeRemovesReadOnlyDirectoriesAsTheirOwner, run as an
// unprivileged user (root removes a read-only directory's entries anyway).
func TestHelperRemoveReadOnlyTree(t *testing.T) {
	dir := os.Getenv("CEVAL_TEMPDIR_HELPER")
	if dir == "" {
		t.Skip("helper of TestRemoveTreeRemovesReadOnlyDirectoriesAsTheirOwner")
	}
	readOnlyTree(t, dir)
	if err := os.RemoveAll(dir); err == nil {
		t.Fatal("os.RemoveAll removed a read-only tree: this user bypasses permissions, the test tests nothing")
	}
	if err := RemoveTree(dir); err != nil {
		t.Fatal(err)
	}
}

// CI's rootless selftest left its private runs directory in /tmp: RemoveAll failed on the
// read-only plugin trees in its run directories (the user owns them, but a directory
// without write permission refuses the removal of its entries to anyone but root).
func TestRemoveTreeRemovesReadOnlyDirectoriesAsTheirOwner(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	if os.Geteuid() != 0 {
		readOnlyTree(t, dir)
		if err := RemoveTree(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(dir); err == nil {
			t.Fatal("left")
		}
		return
	}
	// As root: the same as an unprivileged user (nobody), in a directory of theirs.
	base := filepath.Dir(dir)
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(base), 0o711)
	owned := filepath.Join(base, "nobody")
	dir = filepath.Join(owned, "tree")
	if err := os.Mkdir(owned, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(owned, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	// The test binary, where nobody may run it.
	bin := filepath.Join(base, "tempdir.test")
	if b, err := os.ReadFile(os.Args[0]); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatalf("copying the test binary: %v", err)
	}
	cmd := exec.Command(bin, "-test.run=^TestHelperRemoveReadOnlyTree$", "-test.v")
	cmd.Env = append(os.Environ(), "CEVAL_TEMPDIR_HELPER="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestHelperRemoveReadOnlyTree") {
		t.Fatalf("the helper did not run:\n%s", out)
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Fatal("left")
	}
}

// What is mounted below a directory is never descended into: RemoveAll would empty a
// bind of the host's /dev or of a user's directory.
func TestRemoveTreeRefusesWhatHoldsAMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	m := filepath.Join(dir, "sub", "m")
	os.MkdirAll(m, 0o700)
	if err := unix.Mount("tmpfs", m, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(m, unix.MNT_DETACH) })
	precious := filepath.Join(m, "precious")
	os.WriteFile(precious, []byte("x"), 0o600)
	err := RemoveTree(dir)
	if err == nil || !strings.Contains(err.Error(), m+" is still mounted") {
		t.Errorf("err %v, want %s is still mounted", err, m)
	}
	if _, err := os.Stat(precious); err != nil {
		t.Errorf("a file in the mount was removed: %v", err)
	}
	unix.Unmount(m, unix.MNT_DETACH)
	if err := RemoveTree(dir); err != nil {
		t.Fatal(err)
	}
}

func TestRemoveLiveRemovesWhatMakeMadeAndRemoveDidNot(t *testing.T) {
	base := t.TempDir()
	a, err := Make(base, "ceval-test-")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Make(base, "ceval-test-")
	readOnlyTree(t, a)
	if err := Remove(b); err != nil {
		t.Fatal(err)
	}
	if live := Live(); len(live) != 1 || live[0] != a {
		t.Fatalf("live %v, want [%s]", live, a)
	}
	if errs := RemoveLive(); len(errs) > 0 {
		t.Fatal(errs)
	}
	if ents, _ := os.ReadDir(base); len(ents) > 0 {
		t.Errorf("left: %v", ents)
	}
	if len(Live()) != 0 {
		t.Errorf("still registered: %v", Live())
	}
}

// ceval gc: a killed ceval's directories go, a live one's stay, and nothing else is
// touched (another name, another user's).
func TestSweepRemovesOnlyTheDirectoriesOfAGoneCeval(t *testing.T) {
	base := t.TempDir()
	mine, err := Make(base, "ceval-grade-")
	if err != nil {
		t.Fatal(err)
	}
	defer Remove(mine)
	// A process that ran and is gone: its PID and start time.
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, ok := startTime(pid)
	cmd.Process.Kill()
	cmd.Wait()
	if !ok {
		t.Fatal("no start time of a running process")
	}
	dead := filepath.Join(base, fmt.Sprintf("ceval-verify-p%ds%s-123", pid, start))
	evidence := filepath.Join(base, fmt.Sprintf("ceval-selftest-p%ds%s-321", pid, start))
	os.Mkdir(evidence, 0o700)
	live[evidence] = true
	if err := Keep(evidence); err != nil {
		t.Fatal(err)
	}
	reused := filepath.Join(base, fmt.Sprintf("ceval-verify-p%ds1-456", os.Getpid())) // our PID, another start
	other := filepath.Join(base, "ceval-something-789")
	for _, d := range []string{dead, reused, other} {
		os.Mkdir(d, 0o700)
	}
	readOnlyTree(t, dead)
	removed, kept, err := Sweep(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 || len(kept) != 2 || kept[0].Path != mine && kept[1].Path != mine {
		t.Errorf("removed %v, kept %v", removed, kept)
	}
	for _, d := range []string{dead, reused} {
		if _, err := os.Lstat(d); err == nil {
			t.Errorf("%s left", d)
		}
	}
	for _, d := range []string{mine, other, evidence} {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s removed", d)
		}
	}
}

// inPlace are the os.MkdirTemp calls allowed elsewhere: a directory made beside its
// destination and renamed into place, or one gc sweeps by its own mark.
var inPlace = map[string]string{
	"bundle/build.go":              "beside the output, renamed into place",
	"bundle/copy.go":               "beside the output, renamed into place",
	"images/imagecache.go":         "a cache entry's build, renamed into place (. entries)",
	"kube/tarsnapshot.go":          "beside the snapshot it stages",
	"sandbox/local/rootoverlay.go": "under /run/ceval/roots, named with tempdir.Owner: ceval gc unmounts and removes it (launcher.SweepRootOverlays)",
}

// Every temporary directory ceval makes is one of this package's: removed on error, success
// and signal paths, and swept by gc after a kill. os.MkdirTemp elsewhere (tests and the
// in-place directories aside) is a directory that a second signal or a kill leaves behind.
func TestNoOtherPackageMakesTemporaryDirectories(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	var bad []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", ".git", "node_modules", "scripts", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || filepath.Base(filepath.Dir(p)) == "tempdir" {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "os" && sel.Sel.Name == "MkdirTemp" {
					if rel, _ := filepath.Rel(root, p); inPlace[rel] == "" {
						bad = append(bad, fset.Position(n.Pos()).String())
					}
				}
			}
			return true
		})
		return nil
	})
	for _, b := range bad {
		t.Errorf("%s: os.MkdirTemp: use tempdir.Make and tempdir.Remove", b)
	}
}

// ceval gc after a kill -9 mid-create: the killed verifier's scratch filesystems are mounted
// in its directory (no container names them yet). Sweep detaches them, then removes the
// directory, and never reaches through a mount: a directory bound there keeps its files.
func TestSweepDetachesWhatIsMountedInAGoneCevalsDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	base := t.TempDir()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, _ := startTime(pid)
	cmd.Process.Kill()
	cmd.Wait()
	dead := filepath.Join(base, fmt.Sprintf("ceval-verify-p%ds%s-123", pid, start))
	ws, bound := filepath.Join(dead, "sandbox", "workspace"), filepath.Join(dead, "sandbox", "workspace", "material")
	os.MkdirAll(ws, 0o700)
	if err := unix.Mount("tmpfs", ws, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(ws, unix.MNT_DETACH) })
	os.WriteFile(filepath.Join(ws, "f"), []byte("x"), 0o600)
	precious := t.TempDir()
	os.WriteFile(filepath.Join(precious, "keep"), []byte("x"), 0o600)
	os.Mkdir(bound, 0o700)
	if err := unix.Mount(precious, bound, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(bound, unix.MNT_DETACH) })
	removed, _, err := Sweep(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || !strings.Contains(removed[0].Why, "2 mount(s) below it detached") {
		t.Errorf("removed %v", removed)
	}
	if _, err := os.Lstat(dead); err == nil {
		t.Errorf("%s left", dead)
	}
	if m := mountedBelow(base); m != "" {
		t.Errorf("%s still mounted", m)
	}
	if _, err := os.Stat(filepath.Join(precious, "keep")); err != nil {
		t.Errorf("a file of a directory bound below was removed: %v", err)
	}
}
