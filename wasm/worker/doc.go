// Package worker is the WASM sandbox's worker process: ceval re-executed with
// wire.WorkerCommand (Main), holding no capability, no environment and, under root, UID
// 65534. It sets no_new_privs and a zero core size, reports who it runs as, then reads
// frames of package wasm/wire from stdin: modules to compile (wazero, with the compilation
// cache it reaches only through its inherited descriptor wire.CacheFD), views to hold in
// memory, and runs to answer. It opens no host path but its cache directory.
//
// A run is a fresh module instance over in-memory filesystems (memfs.go, mounts.go):
// /workspace and the other views read-only, symlinks readable but never followed, no hard
// links, /tmp writable and capped. Its linear memory comes from a pool of mappings zeroed
// before reuse and is capped at the run's limit; stdout and stderr are capped; the run's
// timeout stops it. In run_command scripts, python and python3 run the pinned CPython as a
// second instance of the same run through the host functions of the module "ceval"
// (pyhost.go), with its stdlib read out of the module (pystdlib.go), ceval's import guard
// as its sitecustomize and, for pytest, ceval's boot (pytest.go) and bytecode compiled once
// (pylib.go, pyccache.go). CPython is compiled without wazero's context checks, so a limit
// that ends a run while it runs ends the worker, which answers for the run first (guard.go).
//
// It knows nothing of tasks, snapshots or grades: the host (package wasm) decides what
// runs and scores what comes back, and shares only package wasm/wire with it.
package worker
