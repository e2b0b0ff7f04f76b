package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/wasm"
)

// The re-executed ceval takes the wasm cache the host side opened and checked (where the
// owners of its ancestors show) by descriptor, closed on exec from then on so the WASM worker
// and every other child never hold the cache root; anything else the host passed is refused
// with the host's reason, never replaced by a check of the path from inside.
func TestRootlessReexecTakesTheHostsWasmCacheClosedOnExecOrTheHostsReason(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	open := func(p string) string { // as the host side leaves it: inherited across exec
		fd, err := unix.Open(p, unix.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		return strconv.Itoa(fd)
	}
	for _, c := range []struct {
		name, fd, hostErr string
		wantErr           string // "" when the cache is taken
	}{
		{name: "the cache root's descriptor", fd: open(dir)},
		{name: "the host's reason", hostErr: "wasm cache /h/.cache/ceval/wasm: its ancestor /h is mode 0777", wantErr: "its ancestor /h is mode 0777 (checked before entering"},
		{name: "nothing from the host", wantErr: "not opened on the host"},
		{name: "a file, not a directory", fd: open(file), wantErr: "not a directory"},
		{name: "a standard descriptor", fd: "1", wantErr: "a standard descriptor"},
		{name: "not a number", fd: "x", wantErr: `"x"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			rootlessWasmCache, rootlessWasmCacheErr = nil, ""
			t.Setenv(rootlessChildEnv, "4242")
			t.Setenv(rootlessWasmFDEnv, c.fd)
			t.Setenv(rootlessWasmErrEnv, c.hostErr)
			rootlessInherit()
			t.Cleanup(func() {
				if rootlessWasmCache != nil {
					rootlessWasmCache.Close()
				} else if fd, err := strconv.Atoi(c.fd); err == nil && fd > 2 {
					unix.Close(fd)
				}
				rootlessWasmCache, rootlessWasmCacheErr = nil, ""
			})
			for _, v := range []string{rootlessWasmFDEnv, rootlessWasmErrEnv} {
				if _, ok := os.LookupEnv(v); ok {
					t.Errorf("%s left for the children", v)
				}
			}
			inRootless = true
			defer func() { inRootless = false }()
			o, err := wasmOptions(wasm.Options{})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.CacheRoot == nil || strconv.Itoa(int(o.CacheRoot.Fd())) != c.fd || o.WorkerUID != rootlessWorkerUID {
				t.Fatalf("options %+v: want the inherited cache root %s and worker UID %d", o, c.fd, rootlessWorkerUID)
			}
			flags, err := unix.FcntlInt(o.CacheRoot.Fd(), unix.F_GETFD, 0)
			if err != nil || flags&unix.FD_CLOEXEC == 0 {
				t.Errorf("the cache root's descriptor is inherited by children (flags %#x, %v)", flags, err)
			}
		})
	}
}
