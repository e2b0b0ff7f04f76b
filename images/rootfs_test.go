package images

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// rootfsTar is a tar as mmdebstrap writes it: "./"-prefixed names, the root entry first.
func rootfsTar(t *testing.T, mtime time.Time, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	all := append([]tarEntry{{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "./", Mode: 0o755}}}, entries...)
	for _, e := range all {
		h := e.hdr
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		h.ModTime, h.Uname, h.Gname, h.Format = mtime, "root", "root", tar.FormatPAX
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPackageLayerNeutralisesSetuidSetgidAndFileCapabilities(t *testing.T) {
	in := rootfsTar(t, epoch,
		dirEntry("./usr/bin/", 0, 0),
		file("./usr/bin/su", "su", 0o4755),
		file("./usr/bin/chage", "chage", 0o2755),
		tarEntry{hdr: tar.Header{Typeflag: tar.TypeLink, Name: "./usr/bin/su2", Linkname: "./usr/bin/su", Mode: 0o4755}},
		capFile("./usr/bin/ping"),
		tarEntry{hdr: tar.Header{Typeflag: tar.TypeChar, Name: "./dev/sda", Mode: 0o666, Devmajor: 8}},
		tarEntry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "./var/mail/", Mode: 0o2775, Gid: 8}},
	)
	if rep := scanLayers(t, in); len(rep.Dangerous) == 0 {
		t.Fatal("the input has nothing for the scan to find: the test proves nothing")
	}
	var out bytes.Buffer
	res, err := normalizeRootfs(bytes.NewReader(in), &out)
	if err != nil {
		t.Fatal(err)
	}
	if rep := scanLayers(t, out.Bytes()); len(rep.Dangerous) != 0 {
		t.Fatalf("after normalising, the preflight scan still finds %v", paths(rep.Dangerous))
	}
	want := []string{"/usr/bin/chage:setgid", "/usr/bin/ping:file-capability", "/usr/bin/su:setuid", "/usr/bin/su2:setuid"}
	if got := paths(res.Neutralised); !reflect.DeepEqual(got, want) {
		t.Errorf("neutralised %v, want %v", got, want)
	}
	tr := tar.NewReader(&out)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "dev/sda" {
			t.Errorf("device node %s kept", h.Name)
		}
		if len(h.PAXRecords) > 0 && h.PAXRecords[capabilityXattr] != "" {
			t.Errorf("%s keeps its capability xattr", h.Name)
		}
		if h.Name == "var/mail/" && h.Mode != 0o2775 {
			t.Errorf("setgid directory %s mode %o, want it kept (it grants nothing)", h.Name, h.Mode)
		}
		if strings.HasPrefix(h.Name, "./") || strings.HasPrefix(h.Name, "/") {
			t.Errorf("entry %q is not relative and clean", h.Name)
		}
	}
}

func TestPackageLayerIsReproducible(t *testing.T) {
	entries := []tarEntry{dirEntry("./etc/", 0, 0), file("./etc/hostname", "ceval\n", 0o644), file("./usr/bin/su", "su", 0o4755)}
	var a, b bytes.Buffer
	if _, err := normalizeRootfs(bytes.NewReader(rootfsTar(t, time.Now(), entries...)), &a); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if _, err := normalizeRootfs(bytes.NewReader(rootfsTar(t, later, entries...)), &b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the same rootfs written at two times gives two layers")
	}
}

func TestPackageLayerRefusesEntriesLeavingTheRoot(t *testing.T) {
	for _, e := range []tarEntry{
		file("../etc/passwd", "x", 0o644),
		file("./a/../../etc/passwd", "x", 0o644),
		{hdr: tar.Header{Typeflag: tar.TypeLink, Name: "./x", Linkname: "../../etc/shadow"}},
	} {
		in := rootfsTar(t, epoch, e)
		if _, err := normalizeRootfs(bytes.NewReader(in), io.Discard); err == nil {
			t.Errorf("entry %q -> %q accepted", e.hdr.Name, e.hdr.Linkname)
		}
	}
}

func TestPackageLayerKeepsInstalledVersions(t *testing.T) {
	in := rootfsTar(t, epoch, file("./usr/share/ceval/packages.txt", "git=1:2.39\npython3=3.11.2-1\n", 0o644))
	res, err := normalizeRootfs(bytes.NewReader(in), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Versions) != "git=1:2.39\npython3=3.11.2-1\n" {
		t.Fatalf("versions %q", res.Versions)
	}
}

// fakeHost is a host root with os-release, apt sources and one package list.
func fakeHost(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for p, data := range map[string]string{
		"etc/os-release":                           "ID=debian\nVERSION_CODENAME=bookworm\n",
		"etc/apt/sources.list.d/debian.sources":    "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\n",
		"var/lib/apt/lists/deb_bookworm_InRelease": "Date: 1\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestPlanPackagesRefusesOptionsAndUnpinnedPip(t *testing.T) {
	host := fakeHost(t)
	wheels := t.TempDir()
	for _, tc := range []struct {
		name string
		opts PackageOptions
		want string
	}{
		{"option as package", PackageOptions{Packages: []string{"--aptopt=x"}}, "not a Debian package name"},
		{"hook in package list", PackageOptions{Packages: []string{"python3,--customize-hook=id"}}, "not a Debian package name"},
		{"suite option", PackageOptions{Suite: "--mode=root", Packages: []string{"git"}}, "not a Debian suite"},
		{"nothing", PackageOptions{}, "no packages given"},
		{"bad image name", PackageOptions{Name: "Bad Name", Packages: []string{"git"}}, "use a name like ceval.local/NAME:TAG"},
		{"unpinned pip", PackageOptions{Pip: []string{"requests"}, PipFindLinks: wheels}, "not a pinned requirement"},
		{"pip option", PackageOptions{Pip: []string{"a==1 --index-url=http://x"}, PipFindLinks: wheels}, "is not --hash"},
		{"pip without wheels", PackageOptions{Pip: []string{"a==1"}}, "--no-index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.Name == "" {
				tc.opts.Name = "ceval.local/x:1"
			}
			tc.opts.hostRoot = host
			_, err := planPackages(tc.opts)
			if !errors.Is(err, ErrPackageInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrPackageInput containing %q", err, tc.want)
			}
		})
	}
}

func TestPlanPackagesInputsFollowRequestAndAptLists(t *testing.T) {
	host := fakeHost(t)
	plan := func(pkgs ...string) *packagePlan {
		t.Helper()
		p, err := planPackages(PackageOptions{Name: "ceval.local/x:1", Packages: pkgs, hostRoot: host})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := plan("python3", "git")
	if b := plan("git", "python3", "git"); b.inputs != a.inputs {
		t.Errorf("order and duplicates change the inputs")
	}
	if plan("git").inputs == a.inputs {
		t.Errorf("another package list keeps the inputs")
	}
	if len(a.mirrors) != 1 || !strings.HasSuffix(a.mirrors[0], "debian.sources") {
		t.Errorf("mirrors %v, want the host's debian.sources", a.mirrors)
	}
	if err := os.WriteFile(filepath.Join(host, "var/lib/apt/lists/deb_bookworm_InRelease"), []byte("Date: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if plan("python3", "git").inputs == a.inputs {
		t.Errorf("new package lists (apt-get update) keep the inputs")
	}
	other, err := planPackages(PackageOptions{Name: "ceval.local/x:1", Suite: "trixie", Packages: []string{"git"}, hostRoot: host})
	if err != nil {
		t.Fatal(err)
	}
	if len(other.mirrors) != 0 {
		t.Errorf("suite trixie on a bookworm host uses the host's sources %v", other.mirrors)
	}
	args := strings.Join(mmdebstrapArgs(a, "/h"), " ")
	if !strings.Contains(args, "--variant=minbase") || !strings.Contains(args, "--include=git,python3 ") {
		t.Errorf("mmdebstrap args %s", args)
	}
}

func TestPlanPackagesAcceptsImageNamesContainerdTakes(t *testing.T) {
	host := fakeHost(t)
	for _, name := range []string{"my/py:1", "ceval.local/packages:a78c8b382bf9cec9", "localhost:5000/x/y:latest", "ceval.local/agent:latest"} {
		if _, err := planPackages(PackageOptions{Name: name, Packages: []string{"git"}, hostRoot: host}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// pip must never be pointed at an index by the host: its environment is emptied, its
// config file is /dev/null and it runs --no-index from the wheel directory only.
func TestPipRunsWithoutTheHostsPipEnvironment(t *testing.T) {
	s := customizeScript(&packagePlan{pip: []string{"a==1"}, wheels: "/w'x"}, "/r")
	var line string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "pip install") {
			line = l
		}
	}
	for _, want := range []string{`chroot "$root" env -i `, "PIP_CONFIG_FILE=/dev/null", "--no-index", "--find-links /tmp/ceval-pip/wheels"} {
		if !strings.Contains(line, want) {
			t.Errorf("pip command %q lacks %q", line, want)
		}
	}
	if !strings.Contains(s, `cp -r '/w'\''x' `) {
		t.Errorf("the wheel directory is not shell-quoted:\n%s", s)
	}
}
