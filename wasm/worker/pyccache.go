package worker

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"ceval.dev/ceval/wasm/wire"
)

// pytest's bytecode (and that of ceval's sitecustomize) outlives the worker that compiled it: the worker keeps it in its cache
// directory (the one wazero's compilation cache uses, reached through its inherited
// descriptor only) under a key that names the CPython module and every source of the pylib
// view, so any change of either compiles again. A file that does not check out against the
// sha256 it carries (cut short, corrupted) is ignored and written again. Without this every
// grading, and every worker a limit ended, compiled pytest's packages anew: 20-35 s at
// load 6-10.

// pycCacheMagic starts a cache file; its version changes with the format.
const pycCacheMagic = "ceval-pytest-pyc-5\n" // 5: written by the compiler only (keep.go)

// maxPycCacheBytes bounds a cache file read back.
const maxPycCacheBytes = 128 << 20

// pycCacheKey names the bytecode of pylib's sources compiled by the CPython pyDigest running
// script (the compile run's, which decides the flags and what is recorded).
func pycCacheKey(pyDigest, script string, pylib *memFS) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%d\n%s", pycCacheMagic, pyDigest, len(script), script)
	pylib.mu.Lock()
	hashTree(h, pylib.root, "")
	pylib.mu.Unlock()
	return hex.EncodeToString(h.Sum(nil))
}

// hashTree feeds every file and link under n to h, by path in sorted order, skipping
// bytecode already added.
func hashTree(h io.Writer, n *node, dir string) {
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		child, p := n.children[name], path.Join(dir, name)
		switch {
		case child.isDir() && name == "__pycache__":
		case child.isDir():
			hashTree(h, child, p)
		default:
			fmt.Fprintf(h, "%s\x00%o\x00%d\x00%s\x00", p, child.mode, len(child.data), child.target)
			h.Write(child.data)
		}
	}
}

// pycCachePath is where the worker keeps the bytecode of key; kind says of what ("pytest",
// "site").
func pycCachePath(kind, key string) string {
	return "/proc/self/fd/" + strconv.Itoa(wire.CacheFD) + "/" + kind + "-pyc-" + key
}

// writePycCache keeps files under key: magic, the payload's sha256, the payload (for each
// file: its path's length and path, its data's length and data), written whole or not at all.
func writePycCache(kind, key string, files []pycFile) error {
	var payload bytes.Buffer
	for _, f := range files {
		_ = binary.Write(&payload, binary.BigEndian, uint32(len(f.name)))
		payload.WriteString(f.name)
		_ = binary.Write(&payload, binary.BigEndian, uint32(len(f.data)))
		payload.Write(f.data)
	}
	sum := sha256.Sum256(payload.Bytes())
	out := append(append([]byte(pycCacheMagic), sum[:]...), payload.Bytes()...)
	return writeFileAtomic(pycCachePath(kind, key), out)
}

// readPycCache returns the files kept under key, if a cache file holds them intact.
func readPycCache(kind, key string) ([]pycFile, error) {
	data, err := readLimited(pycCachePath(kind, key), maxPycCacheBytes)
	if err != nil {
		return nil, err
	}
	body, ok := bytes.CutPrefix(data, []byte(pycCacheMagic))
	if !ok || len(body) < sha256.Size {
		return nil, errors.New("not a pytest bytecode cache file")
	}
	payload := body[sha256.Size:]
	if sum := sha256.Sum256(payload); !bytes.Equal(sum[:], body[:sha256.Size]) {
		return nil, errors.New("pytest bytecode cache file does not match its sha256")
	}
	var files []pycFile
	for len(payload) > 0 {
		name, rest, ok := cutField(payload)
		if !ok {
			return nil, errors.New("truncated pytest bytecode cache file")
		}
		data, rest, ok := cutField(rest)
		if !ok {
			return nil, errors.New("truncated pytest bytecode cache file")
		}
		if !isPycName(string(name)) {
			return nil, fmt.Errorf("pytest bytecode cache file names %q, not a __pycache__/*.pyc or the codegen file", name)
		}
		files = append(files, pycFile{string(name), bytes.Clone(data)})
		payload = rest
	}
	return files, nil
}

// isPycName says whether name, a path in a view, is one the compile run may produce: a
// __pycache__/*.pyc, or the codegen file of pytest's boot.
func isPycName(name string) bool {
	return name == pytestCodegenFile || strings.HasSuffix(name, ".pyc") && path.Base(path.Dir(name)) == "__pycache__"
}

// cutField splits a big-endian uint32 length and that many bytes off b.
func cutField(b []byte) (field, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(len(b)-4) < uint64(n) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+n:], true
}
