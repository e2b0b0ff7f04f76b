package wasm

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A run worker runs guests over the agent's workspace. Were one to escape wazero, what it
// could leave behind for later grades is what the worker process can write: the cache
// directory it inherits above all, whose native code and bytecode later workers execute.
// So a run worker is started unable to write any file: the thread that starts it (its own
// OS thread, which exits with the worker: startWithNoNewPrivs) restricts itself with a
// Landlock ruleset that handles every write right and allows none of them anywhere (not
// execution: the restricted thread itself executes the worker), and the worker inherits
// that domain across its exec, in every thread, from its first instruction. It keeps reading (the cache) and its inherited pipes. Only the
// compiler (wire.ModeCompile), which runs no guest and sees no workspace, writes the cache.

// Landlock's filesystem rights (linux/landlock.h), by the ABI version that added them.
const (
	llWriteFile  = 1 << 1
	llRemoveDir  = 1 << 4
	llRemoveFile = 1 << 5
	llMakeChar   = 1 << 6
	llMakeDir    = 1 << 7
	llMakeReg    = 1 << 8
	llMakeSock   = 1 << 9
	llMakeFifo   = 1 << 10
	llMakeBlock  = 1 << 11
	llMakeSym    = 1 << 12
	llRefer      = 1 << 13 // ABI 2
	llTruncate   = 1 << 14 // ABI 3
	llIoctlDev   = 1 << 15 // ABI 5

	llCreateRulesetVersion = 1 << 0
)

// landlockABI returns the kernel's Landlock ABI version, 0 when it has none (or it is off).
func landlockABI() int {
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, llCreateRulesetVersion)
	if errno != 0 {
		return 0
	}
	return int(r)
}

// denyThreadFSWrites makes the calling OS thread (locked, with no_new_privs set), and
// every process it starts, unable to write, create, remove, rename or truncate any
// file, through any path or directory descriptor, for good.
func denyThreadFSWrites() error {
	abi := landlockABI()
	if abi < 1 {
		return fmt.Errorf("the kernel has no Landlock (needed to keep a run worker from writing the compilation cache)")
	}
	handled := uint64(llWriteFile | llRemoveDir | llRemoveFile | llMakeChar | llMakeDir |
		llMakeReg | llMakeSock | llMakeFifo | llMakeBlock | llMakeSym)
	if abi >= 2 {
		handled |= llRefer
	}
	if abi >= 3 {
		handled |= llTruncate
	}
	if abi >= 5 {
		handled |= llIoctlDev
	}
	attr := struct{ handledAccessFS uint64 }{handled}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}
