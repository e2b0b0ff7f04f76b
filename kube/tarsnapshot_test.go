package kube

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/kubeproto"
	"ceval.dev/ceval/internal/tempdir"
	"ceval.dev/ceval/snapshot"
)

type tarEntry struct {
	name, link string
	typ        byte
	body       string
	size       int64 // declared size when body is empty and size > 0
	mode       int64
	pax        map[string]string
}

func tarStream(t *testing.T, entries ...tarEntry) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Format: tar.FormatPAX, PAXRecords: e.pax}
		if e.mode != 0 {
			h.Mode = e.mode
		}
		if e.typ == tar.TypeReg && e.pax == nil {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.body != "" {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	return &b
}

func snapTar(t *testing.T, r *bytes.Buffer, lim snapshot.Limits) *snapshot.Snapshot {
	t.Helper()
	dir := t.TempDir()
	s, err := SnapshotTar(r, filepath.Join(dir, "snap"), lim)
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 || left[0].Name() != "snap" {
		t.Errorf("beside the snapshot: %v, want nothing (the staging directory removed)", left)
	}
	for _, d := range tempdir.Live() {
		if strings.HasPrefix(d, dir) {
			t.Errorf("staging %s still registered for removal at exit", d)
		}
	}
	return s
}

func entry(s *snapshot.Snapshot, p string) (snapshot.Entry, bool) {
	for _, e := range s.Entries {
		if e.Path == p {
			return e, true
		}
	}
	return snapshot.Entry{}, false
}

func noted(s *snapshot.Snapshot, p, words string) bool {
	for _, n := range s.Notes {
		if n.Path == p && strings.Contains(n.Reason, words) {
			return true
		}
	}
	return false
}

func TestTarSnapshotCopiesFilesDirsAndRecordsLinks(t *testing.T) {
	s := snapTar(t, tarStream(t, // in the walk's order, as the init writes it
		tarEntry{name: "./", typ: tar.TypeDir},
		tarEntry{name: "./link", typ: tar.TypeSymlink, link: "/etc/passwd"},
		tarEntry{name: "./pipe", typ: tar.TypeFifo},
		tarEntry{name: "./run.sh", typ: tar.TypeReg, body: "#!/bin/sh\n", mode: 0o755},
		tarEntry{name: "./src/", typ: tar.TypeDir},
		tarEntry{name: "./src/main.go", typ: tar.TypeReg, body: "package main\n"},
		tarEntry{name: "./src/z-hard", typ: tar.TypeLink, link: "./src/main.go"},
	), snapshot.Limits{})
	got, _ := os.ReadFile(filepath.Join(s.Dir, "src/main.go"))
	if string(got) != "package main\n" {
		t.Errorf("src/main.go = %q", got)
	}
	if e, ok := entry(s, "run.sh"); !ok || e.Mode != 0o755 {
		t.Errorf("run.sh: %+v", e)
	}
	if e, ok := entry(s, "link"); !ok || e.Kind != snapshot.KindSymlink || e.Target != "/etc/passwd" {
		t.Errorf("link: %+v, want a symlink recorded with its target", e)
	}
	if fi, err := os.Lstat(filepath.Join(s.Dir, "link")); err == nil {
		t.Errorf("the snapshot holds the link on disk: %v", fi.Mode())
	}
	if e, ok := entry(s, "src/z-hard"); !ok || e.Kind != snapshot.KindFile || e.Size != int64(len("package main\n")) {
		t.Errorf("hard: %+v", e)
	}
	if e, ok := entry(s, "pipe"); !ok || e.Kind != snapshot.KindFIFO || e.Omitted == "" {
		t.Errorf("pipe: %+v", e)
	}
	if s.RootOmitted != "" || s.Truncated || len(s.Notes) != 1 { // Take's own note on the FIFO
		t.Errorf("root omitted %q truncated %v notes %v", s.RootOmitted, s.Truncated, s.Notes)
	}
}

func TestTarSnapshotRefusesNamesThatEscapeTheWorkspace(t *testing.T) {
	outside := t.TempDir()
	s := snapTar(t, tarStream(t,
		tarEntry{name: "../escaped", typ: tar.TypeReg, body: "x"},
		tarEntry{name: "a/../../escaped", typ: tar.TypeReg, body: "x"},
		tarEntry{name: filepath.Join(outside, "abs"), typ: tar.TypeReg, body: "x"},
	), snapshot.Limits{})
	if len(s.Entries) != 0 {
		t.Errorf("entries %v, want none", s.Entries)
	}
	if _, err := os.Stat(filepath.Join(outside, "abs")); err == nil {
		t.Error("an absolute name was written outside")
	}
	if s.RootOmitted == "" || !noted(s, "../escaped", "refused") || !noted(s, "a/../../escaped", "refused") || !noted(s, filepath.Join(outside, "abs"), "refused") {
		t.Errorf("root omitted %q, notes %v: want every refusal noted and the root marked incomplete", s.RootOmitted, s.Notes)
	}
}

func TestTarSnapshotDoesNotWriteThroughAPlantedSymlink(t *testing.T) {
	outside := t.TempDir()
	s := snapTar(t, tarStream(t,
		tarEntry{name: "out", typ: tar.TypeSymlink, link: outside},
		tarEntry{name: "out/pwned", typ: tar.TypeReg, body: "x"},
		tarEntry{name: "rel", typ: tar.TypeSymlink, link: "."},
		tarEntry{name: "rel/again", typ: tar.TypeReg, body: "x"},
	), snapshot.Limits{})
	if _, err := os.Stat(filepath.Join(outside, "pwned")); err == nil {
		t.Fatal("a file was written through the planted link, outside the workspace")
	}
	if _, ok := entry(s, "again"); ok {
		t.Error("a file was written through a link inside the workspace")
	}
	if !noted(s, "out/pwned", "parent is not a directory") || !noted(s, "rel/again", "parent is not a directory") || s.RootOmitted == "" {
		t.Errorf("notes %v root omitted %q", s.Notes, s.RootOmitted)
	}
}

func TestTarSnapshotRefusesHardLinkToAFileOutsideTheStream(t *testing.T) {
	s := snapTar(t, tarStream(t,
		tarEntry{name: "passwd", typ: tar.TypeLink, link: "/etc/passwd"},
		tarEntry{name: "up", typ: tar.TypeLink, link: "../../etc/passwd"},
	), snapshot.Limits{})
	if _, ok := entry(s, "passwd"); ok {
		t.Error("a hard link to a host file was made")
	}
	if _, ok := entry(s, "up"); ok {
		t.Error("a hard link out of the workspace was made")
	}
	if !noted(s, "passwd", "hard link") || s.RootOmitted == "" {
		t.Errorf("notes %v root omitted %q", s.Notes, s.RootOmitted)
	}
}

func TestTarSnapshotRecordsDevicesAsOmittedAndRefusesDuplicates(t *testing.T) {
	s := snapTar(t, tarStream(t,
		tarEntry{name: "f", typ: tar.TypeReg, body: "first"},
		tarEntry{name: "f", typ: tar.TypeReg, body: "second"},
		tarEntry{name: "mem", typ: tar.TypeChar},
	), snapshot.Limits{})
	got, _ := os.ReadFile(filepath.Join(s.Dir, "f"))
	if string(got) != "first" {
		t.Errorf("f = %q, want the first copy", got)
	}
	if e, ok := entry(s, "mem"); !ok || e.Kind != snapshot.KindCharDevice || e.Omitted != "character device; never opened" {
		t.Errorf("mem: %+v, want an omitted char-device entry, as the local snapshot records one", e)
	}
	if fi, err := os.Lstat(filepath.Join(s.Dir, "mem")); err == nil {
		t.Errorf("a device entry was made on disk: %v", fi.Mode())
	}
	if !noted(s, "f", "twice") || s.RootOmitted == "" {
		t.Errorf("notes %v root omitted %q", s.Notes, s.RootOmitted)
	}
}

func TestTarSnapshotOmitsAFileOverTheCapWithItsDeclaredSize(t *testing.T) {
	big := strings.Repeat("x", 4096)
	s := snapTar(t, tarStream(t, tarEntry{name: "big", typ: tar.TypeReg, body: big}, tarEntry{name: "small", typ: tar.TypeReg, body: "ok"}),
		snapshot.Limits{MaxFileBytes: 1024})
	if e, ok := entry(s, "big"); !ok || e.Omitted == "" || e.Size != 4096 {
		t.Errorf("big: %+v, want omitted with size 4096", e)
	}
	if e, ok := entry(s, "small"); !ok || e.Omitted != "" {
		t.Errorf("small: %+v", e)
	}
}

func TestTarSnapshotEntryCapStopsAndMarksTheRootIncomplete(t *testing.T) {
	var es []tarEntry
	for i := range 20 {
		es = append(es, tarEntry{name: strings.Repeat("a", i+1), typ: tar.TypeReg, body: "x"})
	}
	s := snapTar(t, tarStream(t, es...), snapshot.Limits{MaxEntries: 5})
	if !s.Truncated || s.RootOmitted == "" || len(s.Entries) > 5 {
		t.Errorf("truncated %v root omitted %q entries %d: want stopped at 5 with the root incomplete", s.Truncated, s.RootOmitted, len(s.Entries))
	}
}

func TestTarSnapshotTotalCapOmitsAFileVisibly(t *testing.T) {
	s := snapTar(t, tarStream(t,
		tarEntry{name: "a", typ: tar.TypeReg, body: strings.Repeat("a", 600)},
		tarEntry{name: "b", typ: tar.TypeReg, body: strings.Repeat("b", 600)},
		tarEntry{name: "c", typ: tar.TypeReg, body: strings.Repeat("c", 300)},
	), snapshot.Limits{MaxTotalBytes: 1000})
	if e, ok := entry(s, "b"); !ok || e.Omitted == "" || e.Size != 600 || s.Bytes != 900 {
		t.Errorf("entries %v bytes %d: want b omitted with its size and c kept, as the local snapshot does", s.Entries, s.Bytes)
	}
	if len(s.LimitsHit) != 1 || !strings.HasPrefix(s.LimitsHit[0], "snapshot total cap") {
		t.Errorf("limits hit %q", s.LimitsHit)
	}
}

func TestTarSnapshotNeverKeepsAFileCutShortByTheStream(t *testing.T) {
	full := tarStream(t, tarEntry{name: "f", typ: tar.TypeReg, body: strings.Repeat("z", 10000)})
	cut := bytes.NewBuffer(full.Bytes()[:512+3000]) // the header and part of the body
	s := snapTar(t, cut, snapshot.Limits{})
	if _, ok := entry(s, "f"); ok {
		t.Error("a file cut short by the stream is in the snapshot as if whole")
	}
	if !s.Truncated || s.RootOmitted == "" {
		t.Errorf("truncated %v root omitted %q", s.Truncated, s.RootOmitted)
	}
}

// A forged stream's entries no filesystem can hold (an overlong name, a link with an empty
// target) are the stream's fault: refused with a note, never a staging error that would end
// the run as ERROR.
func TestTarSnapshotRefusesEntriesNoFilesystemHolds(t *testing.T) {
	long := strings.Repeat("n", 300)
	s := snapTar(t, tarStream(t,
		tarEntry{name: "ok", typ: tar.TypeReg, body: "fine"},
		tarEntry{name: long, typ: tar.TypeReg, body: "x"},
		tarEntry{name: "d/" + long, typ: tar.TypeDir},
		tarEntry{name: "empty-link", typ: tar.TypeSymlink, link: ""},
	), snapshot.Limits{})
	if _, ok := entry(s, "ok"); !ok {
		t.Error("the valid file was not kept")
	}
	if !noted(s, long, "255 bytes") || !noted(s, "empty-link", "empty") {
		t.Errorf("notes %v", s.Notes)
	}
}

// denied is the init's PAX records for an entry it may not open, of size bytes.
func denied(size int64) map[string]string {
	return map[string]string{kubeproto.PAXOmitted: kubeproto.OmittedDenied, kubeproto.PAXSize: strconv.FormatInt(size, 10)}
}

// TestTarSnapshotChmod000DoesNotHideAFileFromANegativeCheck: the agent makes a file and a
// directory unreadable (chmod 000) so the init cannot copy them; a check that src/hack.py
// or anything in src/hidden must not exist must not pass: the snapshot keeps both visible
// and omitted, as the local snapshot does.
func TestTarSnapshotChmod000DoesNotHideAFileFromANegativeCheck(t *testing.T) {
	s := snapTar(t, tarStream(t,
		tarEntry{name: "src/", typ: tar.TypeDir},
		tarEntry{name: "src/hack.py", typ: tar.TypeReg, pax: denied(2)},
		tarEntry{name: "src/hidden/", typ: tar.TypeDir, pax: denied(0)},
		tarEntry{name: "src/ok.py", typ: tar.TypeReg, body: "ok"},
	), snapshot.Limits{})
	if e, ok := s.Lookup("src/hack.py"); !ok || e.Kind != snapshot.KindFile || e.Size != 2 || e.Omitted != "permission denied; left out" {
		t.Errorf("src/hack.py: %+v %v, want an omitted file of 2 bytes", e, ok)
	}
	if _, err := s.ReadFile("src/hack.py"); !errors.Is(err, snapshot.ErrOmitted) {
		t.Errorf("ReadFile(src/hack.py) = %v, want ErrOmitted", err)
	}
	if e, ok := s.Lookup("src/hidden"); !ok || e.Kind != snapshot.KindDir || e.Omitted == "" {
		t.Errorf("src/hidden: %+v %v, want a directory with an omitted listing", e, ok)
	}
	if _, ok := s.Unvouched("src/hidden/hack.py"); !ok {
		t.Error("src/hidden/hack.py is reported absent below an unreadable directory")
	}
	if _, ok := s.Unvouched("src/other.py"); ok {
		t.Error("src's listing arrived whole, yet src/other.py may exist")
	}
	if s.RootOmitted != "" || s.Truncated {
		t.Errorf("root omitted %q truncated %v", s.RootOmitted, s.Truncated)
	}
}

func TestTarSnapshotRecordsASocketAsTheLocalSnapshotDoes(t *testing.T) {
	s := snapTar(t, tarStream(t, tarEntry{name: "sock", typ: kubeproto.TarTypeSocket}), snapshot.Limits{})
	if e, ok := s.Lookup("sock"); !ok || e.Kind != snapshot.KindSocket || e.Omitted != "socket; never opened" {
		t.Errorf("sock: %+v %v", e, ok)
	}
	if s.RootOmitted != "" || !noted(s, "sock", "socket skipped") {
		t.Errorf("root omitted %q notes %v", s.RootOmitted, s.Notes)
	}
}

// TestTarSnapshotCutStreamMarksEveryUnfinishedDirectory: a stream cut inside a/b/f leaves
// a, a/b and the root unfinished; a name under any of them may exist.
func TestTarSnapshotCutStreamMarksEveryUnfinishedDirectory(t *testing.T) {
	full := tarStream(t,
		tarEntry{name: "a/", typ: tar.TypeDir},
		tarEntry{name: "a/b/", typ: tar.TypeDir},
		tarEntry{name: "a/b/f", typ: tar.TypeReg, body: strings.Repeat("z", 10000)},
		tarEntry{name: "a/b/g", typ: tar.TypeReg, body: "g"},
	)
	s := snapTar(t, bytes.NewBuffer(full.Bytes()[:3*512+3000]), snapshot.Limits{})
	for _, p := range []string{"hack.py", "a/hack.py", "a/b/hack.py", "a/b/f"} {
		if _, ok := s.Unvouched(p); !ok {
			t.Errorf("%s is reported absent, though the stream was cut before its directory ended", p)
		}
	}
	if !s.Truncated {
		t.Error("not truncated")
	}
}

// TestTarSnapshotCapsSpeakTheSnapshotsWords: a stream past a cap reports it in the
// snapshot package's own limits_hit lines (the selftest and reports read them).
func TestTarSnapshotCapsSpeakTheSnapshotsWords(t *testing.T) {
	var es []tarEntry
	for i := range 20 {
		es = append(es, tarEntry{name: strings.Repeat("a", i+1), typ: tar.TypeReg, body: "x"})
	}
	s := snapTar(t, tarStream(t, es...), snapshot.Limits{MaxEntries: 5})
	if len(s.LimitsHit) != 1 || !strings.HasPrefix(s.LimitsHit[0], "snapshot entry cap 5") {
		t.Errorf("limits hit %q", s.LimitsHit)
	}
	s = snapTar(t, tarStream(t, tarEntry{name: "big", typ: tar.TypeReg, pax: map[string]string{kubeproto.PAXOmitted: kubeproto.OmittedSize, kubeproto.PAXSize: "17592186044416"}}), snapshot.Limits{})
	if e, ok := s.Lookup("big"); !ok || e.Size != 1<<44 || !strings.Contains(e.Omitted, "per-file cap") {
		t.Errorf("big: %+v %v, want omitted for the per-file cap with its 16 TiB size", e, ok)
	}
	if len(s.LimitsHit) != 1 || !strings.HasPrefix(s.LimitsHit[0], "snapshot per-file cap") {
		t.Errorf("limits hit %q", s.LimitsHit)
	}
}
