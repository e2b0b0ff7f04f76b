// Package wasm owns the WebAssembly sandbox that grades executing criteria (run_command,
// wasm): a wazero runtime in a worker process that ceval starts by re-executing itself
// (WorkerMain), with no environment, no capabilities, no_new_privs and, under root, UID and
// GID 65534; an on-disk compilation cache; the embedded toolbox; and the in-memory
// filesystem the guest sees, built from bytes ceval read itself and sent over a pipe.
//
// The guest sees /workspace (the snapshot, read-only, the working directory), /reference
// (the task's reference, read-only, only with uses_reference; REFERENCE_DIR names it) and
// /tmp (in memory, writable, capped), and nothing else. Symlinks appear as links whose
// target can be read but never followed; there are no hard links. Each run is a fresh
// module instance bounded in wall time, linear memory and stdout/stderr bytes; hitting a
// bound scores 0 and the details name it. No network, no host environment; clocks are real
// and randomness comes from crypto/rand.
//
// Compiled modules live in $XDG_CACHE_HOME/ceval/wasm (default ~/.cache/ceval/wasm), which
// must be mode 0700 and owned by ceval's user. The worker keeps its cache in worker-UID
// below it, owned by the worker's UID, and reaches it only through an inherited descriptor,
// so no other process of that UID can. Per Executor the worker keeps one runtime and
// compiled module per module digest and the current views, so only its first load pays.
//
// In run_command scripts, python and python3 run a pinned CPython 3.12 for WASI (fetched
// through Options.Python, stripped of DWARF, its data segments merged, compiled once) as a
// second module instance of the same run: same views, same /tmp, ceval's read-only
// /ceval/python first on PYTHONPATH, its own stdlib read out of the module and mounted at
// /usr/local/lib (pystdlib.go), stdin given whole and stdout/stderr passed back through
// host-managed buffers, all under the run's one timeout, memory limit and output caps
// (python.go, pyhost.go). CPython is compiled without wazero's context checks (3x faster);
// a limit that ends a run while it runs ends the worker, which answers for the run first
// (guard.go). A task's grader_files are /task (taskview.go); pytest criteria run Debian's
// pytest from a read-only /ceval that no workspace file can displace (pytest.go, pylib.go);
// python_packages are /ceval/packages (pypackages.go).
//
// It never executes guest code in the ceval process, never mounts a host directory into a
// guest, and never follows a link.
package wasm
