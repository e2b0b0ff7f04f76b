package worker

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"ceval.dev/ceval/internal/wasmdata"

	"ceval.dev/ceval/wasm/wire"
)

// CPython's standard library ships inside python.wasm: a zip of .pyc files in the module's
// initial memory, which the module's own embedded filesystem (wasi-vfs) serves as
// /usr/local/lib/python312.zip, first on sys.path. Importing from it made every start pay
// for zipimport: the zip's 460-entry directory parsed in Python (28 ms of a 140 ms
// `python3 -c 'import json'`) and each module inflated in wasm. So the worker reads that
// zip out of the module's data segments once, checks it against its pinned sha256,
// inflates it into a read-only directory (python3.12/...) and mounts it at /usr/local/lib
// for every CPython instance. The mount hides the embedded zip, and CPython's default
// sys.path finds the same bytecode in /usr/local/lib/python3.12, its next entry, whatever
// flags (-I, -S, -E) it runs with. These are the module's own bytes, already compiled, so
// nothing needs compiling or caching per run; ceval adds only lib-dynload (empty) and
// site-packages/ceval.pth.

// pythonStdlibZipSHA256 is the digest of the stdlib zip inside the module
// pythonSandboxSHA256 names; a change of pin must change it too.
const pythonStdlibZipSHA256 = "8bfdca871d7f94b19eac07787c6d8e72ccc30cda8b2047e4739406da0708589b"

// pythonSitePth is ceval.pth in the stdlib's site-packages, which site processes even when
// python3 runs with -E or -I (which ignore PYTHONPATH, and with it ceval's sitecustomize):
// it puts ceval's site directory on sys.path and imports that sitecustomize, so the stdlib
// guard and the move into the shell's working directory hold for every python3 that runs
// site. (site's own import of sitecustomize then finds it imported.) A shell's python3 -S
// runs site too (pythonArgv drops -S); only ceval's own -S starts (its pytest boot, which
// guards itself) skip it.
const pythonSitePth = wire.PythonSiteDir + "\nimport sitecustomize\n"

// pythonCacheTag is sys.implementation.cache_tag of the pinned CPython: its bytecode files
// are NAME.<tag>.pyc in __pycache__.
const pythonCacheTag = "cpython-312"

// pythonStdlibSubdir is the directory below wire.PythonStdlibDir that CPython's sys.path
// names.
const pythonStdlibSubdir = "python3.12"

// Bounds on what the extraction builds: the module is pinned, these only keep a bad pin
// from costing more than a failure.
const (
	maxStdlibImage = 64 << 20 // bytes of initial memory the data segments may span
	maxStdlibBytes = 64 << 20 // bytes of the stdlib once inflated
)

// pythonStdlib returns the stdlib of the CPython module as a read-only memFS.
func pythonStdlib(module []byte) (*memFS, error) {
	img, err := wasmdata.InitialMemory(module, maxStdlibImage)
	if err != nil {
		return nil, fmt.Errorf("CPython's stdlib: %w", err)
	}
	z, err := findZip(img, pythonStdlibZipSHA256)
	if err != nil {
		return nil, fmt.Errorf("CPython's stdlib: %w", err)
	}
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		return nil, fmt.Errorf("CPython's stdlib: %w", err)
	}
	v := newMemFS(9, false)
	var total int64
	for _, f := range zr.File {
		name := path.Clean(f.Name)
		if f.FileInfo().IsDir() {
			continue
		}
		if !fs.ValidPath(name) || strings.Contains(f.Name, "\\") {
			return nil, fmt.Errorf("CPython's stdlib: bad entry %q", f.Name)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("CPython's stdlib: %s: %w", f.Name, err)
		}
		data, err := io.ReadAll(io.LimitReader(rc, maxStdlibBytes-total+1))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("CPython's stdlib: %s: %w", f.Name, err)
		}
		if total += int64(len(data)); total > maxStdlibBytes {
			return nil, fmt.Errorf("CPython's stdlib: over %s inflated", human(maxStdlibBytes))
		}
		if err := v.put(pythonStdlibSubdir+"/"+name, 0o444, data, ""); err != nil {
			return nil, fmt.Errorf("CPython's stdlib: %w", err)
		}
	}
	// CPython looks for this directory to settle sys.exec_prefix, and warns on stderr
	// ("Could not find platform dependent libraries") when it is missing.
	if err := v.put(pythonStdlibSubdir+"/lib-dynload", fs.ModeDir|0o555, nil, ""); err != nil {
		return nil, fmt.Errorf("CPython's stdlib: %w", err)
	}
	if err := v.put(pythonStdlibSubdir+"/site-packages/ceval.pth", 0o444, []byte(pythonSitePth), ""); err != nil {
		return nil, fmt.Errorf("CPython's stdlib: %w", err)
	}
	v.readOnly = true
	return v, nil
}

// findZip returns the zip archive in img whose bytes have sha256 want: each end-of-central-
// directory record, from the last, names where its archive starts.
func findZip(img []byte, want string) ([]byte, error) {
	eocd := []byte("PK\x05\x06")
	for end := len(img); ; {
		i := bytes.LastIndex(img[:end], eocd)
		if i < 0 {
			return nil, fmt.Errorf("no zip with sha256 %s in the module's data", want)
		}
		end = i
		if i+22 > len(img) {
			continue
		}
		cdSize := int64(binary.LittleEndian.Uint32(img[i+12:]))
		cdOff := int64(binary.LittleEndian.Uint32(img[i+16:]))
		stop := int64(i) + 22 + int64(binary.LittleEndian.Uint16(img[i+20:]))
		start := int64(i) - cdSize - cdOff
		if start < 0 || stop > int64(len(img)) {
			continue
		}
		z := img[start:stop]
		if sum := sha256.Sum256(z); hex.EncodeToString(sum[:]) == want {
			return z, nil
		}
	}
}
