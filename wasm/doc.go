// Package wasm is the host side of the WebAssembly sandbox that grades executing criteria
// (run_command, wasm, pytest): the Executor starts the worker process (package wasm/worker)
// by re-executing ceval with wire.WorkerCommand, with no environment, "/" as its directory,
// its own process group and, under root, UID and GID 65534 without supplementary groups,
// and checks its handshake (no capability, no_new_privs, no environment) before sending it
// anything. It speaks to the worker only through package wasm/wire: it never links wazero,
// and the worker never links task, snapshot or grader.
//
// What the host owns: the views the guest sees, built from bytes ceval read itself
// (view.go: the snapshot never-follow, the reference through the task's handle; taskview.go:
// the grader files; pytest.go: pytest's packages; pypackages.go: python_packages and
// wheels), the modules (the embedded toolbox, a task's pinned module, the pinned CPython
// prepared once, python.go), the compilation cache directory (cache.go: $XDG_CACHE_HOME/
// ceval/wasm, mode 0700, owned by ceval's user, on a path no one else can swap; the worker's
// part, worker-UID, reached by the worker only through an inherited descriptor), each
// round trip's deadline, and scoring the reply (score.go, through grader's rules).
//
// The guest sees /workspace (the snapshot, read-only, the working directory), /reference
// (only with uses_reference), /task (grader_files), /tmp (in memory, writable, capped) and,
// for CPython, ceval's read-only /ceval and its stdlib; nothing else. Each run is a fresh
// module instance bounded in wall time, linear memory and stdout/stderr bytes; hitting a
// bound scores 0 and the details name it. A worker that dies or stops answering is killed
// and scores the criterion 0; the next criterion starts a new one.
//
// It never executes guest code in the ceval process, never mounts a host directory into a
// guest, and never follows a link.
package wasm
