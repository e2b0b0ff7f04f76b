package images

import (
	"archive/tar"
	"bytes"
	"reflect"
	"testing"

	digest "github.com/opencontainers/go-digest"
)

// tarEntry is one header (and body) of a hand-made layer.
type tarEntry struct {
	hdr  tar.Header
	body string
}

func layerTar(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		h.ModTime = epoch
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

func file(name, body string, mode int64) tarEntry {
	return tarEntry{hdr: tar.Header{Name: name, Mode: mode}, body: body}
}

func dirEntry(name string, uid, gid int) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, Uid: uid, Gid: gid}}
}

// netRawCap is a vfs_cap_data v2 value granting cap_net_raw (effective, permitted).
const netRawCap = "\x01\x00\x00\x02" + "\x00\x20\x00\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"

func capFile(name string) tarEntry {
	return tarEntry{hdr: tar.Header{Name: name, Mode: 0o755, PAXRecords: map[string]string{capabilityXattr: netRawCap}}, body: "x"}
}

func whiteout(name string) tarEntry { return file(name, "", 0o644) }

const agentPasswd = "root:x:0:0:root:/root:/bin/sh\nagent:x:2000:2000::/home/agent:/bin/sh\n"

func scanLayers(t *testing.T, layers ...[]byte) *Report {
	t.Helper()
	v := newFSView()
	for _, l := range layers {
		if err := v.addLayer(bytes.NewReader(l)); err != nil {
			t.Fatal(err)
		}
	}
	return reportFor(Image{Name: "test"}, defaultConfig("amd64", ""), v)
}

func paths(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Path+":"+f.Kind)
	}
	return out
}

func TestScanFindsPrivilegeGrantingFiles(t *testing.T) {
	tests := []struct {
		name   string
		layers [][]byte
		want   []string
	}{
		{"clean layer", [][]byte{layerTar(t, file("bin/sh", "x", 0o755))}, []string{}},
		{"setuid root binary", [][]byte{layerTar(t, file("usr/bin/su", "x", 0o4755))}, []string{"/usr/bin/su:setuid"}},
		{"setgid binary", [][]byte{layerTar(t, file("./usr/bin/wall", "x", 0o2755))}, []string{"/usr/bin/wall:setgid"}},
		{"setuid and setgid", [][]byte{layerTar(t, file("x", "x", 0o6755))}, []string{"/x:setgid", "/x:setuid"}},
		{"file capability in PAX xattr", [][]byte{layerTar(t, capFile("usr/bin/ping"))}, []string{"/usr/bin/ping:file-capability"}},
		{"setgid directory is harmless", [][]byte{layerTar(t, tarEntry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "var/mail/", Mode: 0o2775}})}, []string{}},
		{"hard link to setuid file", [][]byte{layerTar(t, file("bin/su", "x", 0o4755), tarEntry{hdr: tar.Header{Typeflag: tar.TypeLink, Name: "tmp/innocent", Linkname: "bin/su", Mode: 0o755}})},
			[]string{"/bin/su:setuid", "/tmp/innocent:setuid"}},
		{"whiteout in later layer removes setuid file", [][]byte{layerTar(t, file("usr/bin/su", "x", 0o4755)), layerTar(t, whiteout("usr/bin/.wh.su"))}, []string{}},
		{"whiteout of parent dir removes setuid file", [][]byte{layerTar(t, file("opt/x/su", "x", 0o4755)), layerTar(t, whiteout("opt/.wh.x"))}, []string{}},
		{"opaque dir removes lower setuid file", [][]byte{layerTar(t, file("opt/su", "x", 0o4755)), layerTar(t, dirEntry("opt/", 0, 0), whiteout("opt/.wh..wh..opq"))}, []string{}},
		{"opaque dir keeps setuid file of its own layer", [][]byte{layerTar(t, file("opt/su", "x", 0o755)), layerTar(t, file("opt/su2", "x", 0o4755), whiteout("opt/.wh..wh..opq"))}, []string{"/opt/su2:setuid"}},
		{"later layer replaces setuid file with plain one", [][]byte{layerTar(t, file("bin/su", "x", 0o4755)), layerTar(t, file("bin/su", "y", 0o755))}, []string{}},
		{"later layer adds setuid bit", [][]byte{layerTar(t, file("bin/su", "x", 0o755)), layerTar(t, file("bin/su", "y", 0o4755))}, []string{"/bin/su:setuid"}},
		{"whiteout of same name in a lower layer does not hide upper file", [][]byte{layerTar(t, whiteout("bin/.wh.su")), layerTar(t, file("bin/su", "y", 0o4755))}, []string{"/bin/su:setuid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := paths(scanLayers(t, tt.layers...).Dangerous)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("findings = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestScanReadsAgentPasswdHonouringWhiteouts(t *testing.T) {
	tests := []struct {
		name              string
		layers            [][]byte
		user, home, owner string
		problem           bool
	}{
		{"passwd with agent and home", [][]byte{layerTar(t, dirEntry("home/agent/", 2000, 2000), file("etc/passwd", agentPasswd, 0o644))}, "agent", "/home/agent", "2000:2000", false},
		{"passwd without agent", [][]byte{layerTar(t, file("etc/passwd", "root:x:0:0::/root:/bin/sh\n", 0o644))}, "", "", "", false},
		{"no passwd", [][]byte{layerTar(t, file("bin/sh", "x", 0o755))}, "", "", "", true},
		{"agent but no home dir", [][]byte{layerTar(t, file("etc/passwd", agentPasswd, 0o644))}, "agent", "/home/agent", "", false},
		{"later layer rewrites passwd", [][]byte{layerTar(t, file("etc/passwd", "root:x:0:0::/root:/bin/sh\n", 0o644)), layerTar(t, file("etc/passwd", agentPasswd, 0o644))}, "agent", "/home/agent", "", false},
		{"later layer whites out passwd", [][]byte{layerTar(t, file("etc/passwd", agentPasswd, 0o644)), layerTar(t, whiteout("etc/.wh.passwd"))}, "", "", "", true},
		{"later layer makes /etc opaque", [][]byte{layerTar(t, file("etc/passwd", agentPasswd, 0o644)), layerTar(t, dirEntry("etc/", 0, 0), whiteout("etc/.wh..wh..opq"))}, "", "", "", true},
		{"later layer removes home", [][]byte{layerTar(t, dirEntry("home/agent/", 2000, 2000), file("etc/passwd", agentPasswd, 0o644)), layerTar(t, whiteout("home/.wh.agent"))}, "agent", "/home/agent", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := scanLayers(t, tt.layers...)
			if r.AgentUser != tt.user || r.AgentHome != tt.home || r.AgentHomeOwner != tt.owner || (r.PasswdProblem != "") != tt.problem {
				t.Errorf("got user %q home %q owner %q problem %q; want %q %q %q problem=%v", r.AgentUser, r.AgentHome, r.AgentHomeOwner, r.PasswdProblem, tt.user, tt.home, tt.owner, tt.problem)
			}
		})
	}
}

func TestRunnableRefusesUnlabeledAndDangerousImages(t *testing.T) {
	tests := []struct {
		name    string
		report  Report
		wantErr []string
	}{
		{"labeled clean image runs", Report{Image: Image{Name: "img"}, Label: IsolationLabelValue}, nil},
		{"unlabeled image names the fix", Report{Image: Image{Name: "img"}}, []string{"ceval images check img", "ceval images label img", "ceval images build-default"}},
		{"wrong label value", Report{Image: Image{Name: "img"}, Label: "v0"}, []string{`"v0"`, "ceval images label img"}},
		{"labeled but setuid file", Report{Image: Image{Name: "img"}, Label: IsolationLabelValue, Dangerous: []Finding{{Path: "/bin/su", Kind: KindSetuid}}}, []string{"/bin/su (setuid)", "ceval images build-default"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.report.Runnable()
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Runnable() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Runnable() = nil, want an error")
			}
			for _, w := range tt.wantErr {
				if !bytes.Contains([]byte(err.Error()), []byte(w)) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// Only an image ceval pulled (and so preflighted) runs without the label; an unlabeled
// image from anywhere else, or a pulled one holding a setuid file, is still refused.
func TestRunnableImageWaivesTheLabelOnlyForACleanPulledImage(t *testing.T) {
	clean := Report{Image: Image{Name: "img"}}
	suid := Report{Image: Image{Name: "img"}, Dangerous: []Finding{{Path: "/bin/su", Kind: KindSetuid}}}
	cases := []struct {
		name string
		rep  Report
		src  string
		ok   bool
	}{
		{"pulled, clean", clean, SourcePulled, true},
		{"imported, unlabeled", clean, SourceImported, false},
		{"unknown source, unlabeled", clean, "", false},
		{"pulled, setuid", suid, SourcePulled, false},
	}
	for _, c := range cases {
		err := c.rep.RunnableImage(Image{Name: "img", Source: c.src})
		if (err == nil) != c.ok {
			t.Errorf("%s: RunnableImage = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

func TestChecksMarkOnlyBlockingProblemsFail(t *testing.T) {
	r := &Report{Image: Image{Name: "img"}, Label: IsolationLabelValue, PasswdProblem: "the image has no /etc/passwd"}
	for _, c := range r.Checks() {
		if c.Status == "FAIL" {
			t.Errorf("check %s failed on a runnable image: %s", c.Name, c.Detail)
		}
	}
	r.Dangerous = []Finding{{Path: "/bin/ping", Kind: KindCapability}}
	var failed []string
	for _, c := range r.Checks() {
		if c.Status == "FAIL" {
			failed = append(failed, c.Name)
		}
	}
	if !reflect.DeepEqual(failed, []string{"file capabilities"}) {
		t.Errorf("failed checks = %v, want [file capabilities]", failed)
	}
}

func digestOf(b []byte) digest.Digest { return digest.FromBytes(b) }
