package task

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"io/fs"
	"strconv"
	"strings"
	"testing"
)

const pureWheelMeta = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"

// wheelEntry is one member of a test archive; raw entries carry their header as given
// (sizes that lie), the rest are deflated honestly.
type wheelEntry struct {
	name string
	data string
	mode fs.FileMode // 0: a regular file 0644
	raw  *zip.FileHeader
}

func buildWheel(t *testing.T, entries ...wheelEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		if e.raw != nil {
			w, err := zw.CreateRaw(e.raw)
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte(e.data))
			continue
		}
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(e.data))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pureWheel is a valid pure-Python wheel plus extra entries.
func pureWheel(t *testing.T, extra ...wheelEntry) []byte {
	return buildWheel(t, append([]wheelEntry{
		{name: "wheelmod/__init__.py", data: "X = 7\n"},
		{name: "wheelmod-1.0.dist-info/METADATA", data: "Name: wheelmod\nVersion: 1.0\n"},
		{name: "wheelmod-1.0.dist-info/WHEEL", data: pureWheelMeta},
	}, extra...)...)
}

func deflated(t *testing.T, data []byte) []byte {
	var b bytes.Buffer
	fw, _ := flate.NewWriter(&b, flate.BestCompression)
	fw.Write(data)
	fw.Close()
	return b.Bytes()
}

func sum(data []byte) string { s := sha256.Sum256(data); return hex.EncodeToString(s[:]) }

func wheelTask(whl string, s string) string {
	return "task_id: t1\ninitial_prompt: do it\npython_wheels:\n  - {path: wheels/" + whl + ", sha256: " + s + "}\nsuccess_criteria:\n  - {type: run_command, command: \"python3 -c 'import wheelmod'\"}\n"
}

func TestPythonWheelIsUnpackedAtLoadAndReachesPythonCriteria(t *testing.T) {
	data := pureWheel(t, wheelEntry{name: "wheelmod-1.0.data/purelib/wheelextra.py", data: "Y = 1\n"})
	tk, err := Load(writeTask(t, wheelTask("wheelmod-1.0-py3-none-any.whl", sum(data)), map[string]string{"wheels/wheelmod-1.0-py3-none-any.whl": string(data)}))
	if err != nil {
		t.Fatal(err)
	}
	ws := tk.Criteria[0].Execution().PythonWheels
	if len(ws) != 1 {
		t.Fatalf("criterion wheels %v", ws)
	}
	got := map[string]string{}
	for _, f := range ws[0].Files {
		got[f.Name] = string(f.Data)
	}
	if got["wheelmod/__init__.py"] != "X = 7\n" || got["wheelextra.py"] != "Y = 1\n" || len(got) != 4 {
		t.Errorf("files %v", got)
	}
	if strings.Join(ws[0].Top, " ") != "wheelextra.py wheelmod wheelmod-1.0.dist-info" {
		t.Errorf("top %q", ws[0].Top)
	}
	if _, ok := tk.read[ws[0].Path]; !ok {
		t.Error("the wheel is not part of the task's digest")
	}
}

func TestPythonWheelWithWrongSHA256IsAnErrorAtItsLine(t *testing.T) {
	data := pureWheel(t)
	_, err := Load(writeTask(t, wheelTask("wheelmod-1.0-py3-none-any.whl", strings.Repeat("0", 64)), map[string]string{"wheels/wheelmod-1.0-py3-none-any.whl": string(data)}))
	if err == nil || !strings.Contains(err.Error(), "task.yaml:4:") || !strings.Contains(err.Error(), "not the pinned") {
		t.Errorf("err = %v", err)
	}
}

// Each hostile or impure archive is refused at load, with the wheel's file:line and the
// reason, before anything of it reaches a sandbox.
func TestHostilePythonWheelIsRefusedAtLoad(t *testing.T) {
	zeros := make([]byte, 2<<20)
	for _, tc := range []struct {
		name, file string
		data       func(t *testing.T) []byte
		want       string
	}{
		{"path escape with ..", "", func(t *testing.T) []byte { return pureWheel(t, wheelEntry{name: "../evil.py", data: "x"}) }, "leave the packages directory"},
		{"path escape inside", "", func(t *testing.T) []byte { return pureWheel(t, wheelEntry{name: "wheelmod/../../evil.py", data: "x"}) }, "leave the packages directory"},
		{"absolute path", "", func(t *testing.T) []byte { return pureWheel(t, wheelEntry{name: "/etc/evil.py", data: "x"}) }, "absolute"},
		{"backslash path", "", func(t *testing.T) []byte { return pureWheel(t, wheelEntry{name: `..\evil.py`, data: "x"}) }, "backslash"},
		{"symlink", "", func(t *testing.T) []byte {
			return pureWheel(t, wheelEntry{name: "wheelmod/passwd", data: "/etc/passwd", mode: fs.ModeSymlink | 0o777})
		}, "symbolic link"},
		{"named twice", "", func(t *testing.T) []byte {
			return pureWheel(t, wheelEntry{name: "wheelmod/__init__.py", data: "X = 8\n"})
		}, "twice"},
		{"native library", "", func(t *testing.T) []byte {
			return pureWheel(t, wheelEntry{name: "wheelmod/_speed.cpython-312-x86_64-linux-gnu.so", data: "\x7fELF"})
		}, "native code"},
		{"platform tags in the name", "wheelmod-1.0-cp312-cp312-manylinux_2_17_x86_64.whl", func(t *testing.T) []byte { return pureWheel(t) }, "not a pure-Python wheel"},
		{"platform WHEEL metadata", "", func(t *testing.T) []byte {
			return buildWheel(t, wheelEntry{name: "wheelmod/__init__.py", data: "X = 7\n"},
				wheelEntry{name: "wheelmod-1.0.dist-info/WHEEL", data: "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-any\n"})
		}, "Root-Is-Purelib"},
		{"scripts outside the packages", "", func(t *testing.T) []byte {
			return pureWheel(t, wheelEntry{name: "wheelmod-1.0.data/scripts/run", data: "#!/bin/sh\n"})
		}, "installs into scripts"},
		{"a .pth file", "", func(t *testing.T) []byte { return pureWheel(t, wheelEntry{name: "evil.pth", data: "import os\n"}) }, ".pth"},
		{"not a zip", "", func(t *testing.T) []byte { return []byte("not a zip at all") }, "not a readable zip"},
		{"no WHEEL", "", func(t *testing.T) []byte { return buildWheel(t, wheelEntry{name: "wheelmod/__init__.py", data: "x"}) }, "no NAME.dist-info/WHEEL"},
		{"bomb: inflates too much", "", func(t *testing.T) []byte {
			return pureWheel(t, wheelEntry{name: "wheelmod/zeros.py", data: string(zeros)})
		}, "zip bomb"},
		{"bomb: header declares less than it holds", "", func(t *testing.T) []byte {
			body := deflated(t, zeros[:64<<10])
			h := &zip.FileHeader{Name: "wheelmod/lie.py", Method: zip.Deflate, CompressedSize64: uint64(len(body)), UncompressedSize64: 10, CRC32: crc32.ChecksumIEEE(zeros[:10])}
			return pureWheel(t, wheelEntry{raw: h, data: string(body)})
		}, "entry \"wheelmod/lie.py\""},
		{"bomb: header declares more than ceval unpacks", "", func(t *testing.T) []byte {
			body := deflated(t, []byte("x"))
			h := &zip.FileHeader{Name: "wheelmod/big.py", Method: zip.Deflate, CompressedSize64: uint64(len(body)), UncompressedSize64: MaxWheelFileBytes + 1}
			return pureWheel(t, wheelEntry{raw: h, data: string(body)})
		}, "over what ceval unpacks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.file
			if file == "" {
				file = "wheelmod-1.0-py3-none-any.whl"
			}
			data := tc.data(t)
			_, err := Load(writeTask(t, wheelTask(file, sum(data)), map[string]string{"wheels/" + file: string(data)}))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "task.yaml:4:") {
				t.Errorf("err = %v, want %q at task.yaml:4", err, tc.want)
			}
		})
	}
}

func TestPythonWheelOverlappingPythonPackagesIsAnError(t *testing.T) {
	fakeDistPackages(t)
	data := buildWheel(t, wheelEntry{name: "purepkg/__init__.py", data: "x"},
		wheelEntry{name: "purepkg-1.0.dist-info/WHEEL", data: pureWheelMeta})
	doc := "task_id: t1\ninitial_prompt: do it\npython_packages: [purepkg]\npython_wheels:\n  - {path: wheels/purepkg-1.0-py3-none-any.whl, sha256: " + sum(data) + "}\nsuccess_criteria:\n  - {type: run_command, command: \"python3 -c 'import purepkg'\"}\n"
	_, err := Load(writeTask(t, doc, map[string]string{"wheels/purepkg-1.0-py3-none-any.whl": string(data)}))
	if err == nil || !strings.Contains(err.Error(), "python_packages also names") {
		t.Errorf("err = %v", err)
	}
}

// A wheel named by many criteria is unpacked and held once (a small bomb named a hundred
// times must not be held a hundred times), and the task's distinct wheels are bounded
// together.
func TestPythonWheelNamedManyTimesIsHeldOnceAndTheTasksWheelsAreBounded(t *testing.T) {
	mib := strings.Repeat("\x00", 1<<20)
	bomb := func(mod string, n int) []byte {
		entries := []wheelEntry{
			{name: mod + "/__init__.py", data: "X = 7\n"},
			{name: mod + "-1.0.dist-info/METADATA", data: "Name: " + mod + "\nVersion: 1.0\n"},
			{name: mod + "-1.0.dist-info/WHEEL", data: pureWheelMeta},
		}
		for i := 0; i < n; i++ {
			entries = append(entries, wheelEntry{name: mod + "/blob" + strconv.Itoa(i) + ".bin", data: mib})
		}
		return buildWheel(t, entries...)
	}
	one := bomb("bombmod", 8)
	doc := "task_id: t1\ninitial_prompt: do it\nsuccess_criteria:\n"
	for i := 0; i < 20; i++ {
		doc += "  - {type: run_command, command: \"python3 -c 'import bombmod'\", python_wheels: [{path: wheels/bombmod-1.0-py3-none-any.whl, sha256: " + sum(one) + "}]}\n"
	}
	tk, err := Load(writeTask(t, doc, map[string]string{"wheels/bombmod-1.0-py3-none-any.whl": string(one)}))
	if err != nil {
		t.Fatal(err)
	}
	first := &tk.Criteria[0].Execution().PythonWheels[0].Files[3].Data[0]
	for i, c := range tk.Criteria {
		if len(c.Execution().PythonWheels) != 1 || &c.Execution().PythonWheels[0].Files[3].Data[0] != first {
			t.Fatalf("criterion %d holds its own unpacked copy of the wheel", i)
		}
	}
	tk.Close()

	files := map[string]string{}
	doc = "task_id: t1\ninitial_prompt: do it\npython_wheels:\n"
	for _, mod := range []string{"bomba", "bombb", "bombc"} {
		w := bomb(mod, 50)
		name := mod + "-1.0-py3-none-any.whl"
		files["wheels/"+name] = string(w)
		doc += "  - {path: wheels/" + name + ", sha256: " + sum(w) + "}\n"
	}
	doc += "success_criteria:\n  - {type: run_command, command: \"python3 -c 'import bomba'\"}\n"
	_, err = Load(writeTask(t, doc, files))
	if err == nil || !strings.Contains(err.Error(), "task.yaml:6:") || !strings.Contains(err.Error(), "wheels may hold together") {
		t.Fatalf("err = %v, want the third wheel refused at its line", err)
	}
}
