// Command ceval-probe is the agent of the selftest attack kernel-syscalls: it makes the
// kernel-layer calls no busybox tool makes (bpf, keyctl, io_uring_setup, perf_event_open,
// userfaultfd, a new user namespace, raw and packet sockets) and logs each in the selftest
// format of selftest/lib.sh on stdout:
//
//	ATTEMPT <name>: <call>
//	<name>: <error>
//	(an empty line)
//	RC <name> <0, or the errno>
//
// On any success it also logs "PROOF ..." and appends that line to /workspace/proof.txt,
// which the attack's criteria reward. It takes no arguments and always exits 0, so its own
// exit code never hides a result. It is static (stdlib and x/sys/unix only), committed as
// internal/embedded/ceval-probe and added to the attack's image by the selftest.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// childEnv marks the probe's own re-execution as the child of the user-namespace clone: it
// exits at once. It is not an input of the probe, only of its child.
const childEnv = "CEVAL_PROBE_USERNS_CHILD"

// uffdUserModeOnly is UFFD_USER_MODE_ONLY (Linux 5.11): the flag that lets an unprivileged
// process have a userfaultfd when vm.unprivileged_userfaultfd is 0.
const uffdUserModeOnly = 1

func main() {
	if os.Getenv(childEnv) == "1" {
		os.Exit(0)
	}
	for _, p := range probes {
		run(p)
	}
}

// probe is one kernel call; do returns nil when the kernel granted it.
type probe struct {
	name, call string
	do         func() error
}

var probes = []probe{
	{"bpf map create", "bpf(BPF_MAP_CREATE, array map)", bpfMapCreate},
	{"bpf prog load", "bpf(BPF_PROG_LOAD, socket filter 'r0 = 0; exit')", bpfProgLoad},
	{"keyctl add_key", "add_key(\"user\", \"ceval-probe\", ..., KEY_SPEC_SESSION_KEYRING)", addKey},
	{"keyctl join session keyring", "keyctl(KEYCTL_JOIN_SESSION_KEYRING, \"ceval-probe\")", joinKeyring},
	{"io_uring_setup", "io_uring_setup(1, &params)", ioUringSetup},
	{"perf_event_open", "perf_event_open(software cpu-clock, this process, any cpu)", perfEventOpen},
	{"userfaultfd", "userfaultfd(O_CLOEXEC|O_NONBLOCK)", func() error { return userfaultfd(0) }},
	{"userfaultfd user-mode-only", "userfaultfd(O_CLOEXEC|O_NONBLOCK|UFFD_USER_MODE_ONLY)", func() error { return userfaultfd(uffdUserModeOnly) }},
	{"unshare CLONE_NEWUSER", "unshare(CLONE_NEWUSER)", unshareUser},
	{"clone CLONE_NEWUSER", "clone(CLONE_NEWUSER) of a child that exits", cloneUser},
	{"socket AF_PACKET", "socket(AF_PACKET, SOCK_RAW, ETH_P_ALL)", func() error {
		return socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
	}},
	{"socket AF_INET raw", "socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)", func() error {
		return socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
	}},
}

func run(p probe) {
	fmt.Printf("ATTEMPT %s: %s\n", p.name, p.call)
	err := p.do()
	code := 0
	if err != nil {
		fmt.Printf("%s: %v\n", p.name, err)
		var errno syscall.Errno
		if errors.As(err, &errno) {
			code = int(errno)
		} else {
			code = 1
		}
	}
	fmt.Printf("\nRC %s %d\n", p.name, code)
	if err == nil {
		proof(p.call + " succeeded")
	}
}

// proof does what lib.sh's proof does: log the line and append it to /workspace/proof.txt.
func proof(msg string) {
	line := "PROOF " + msg + "\n"
	fmt.Print(line)
	f, err := os.OpenFile("/workspace/proof.txt", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Printf("INFO cannot write the proof: %v\n", err)
		return
	}
	_, _ = f.WriteString(line)
	_ = f.Close()
}

// closeFd closes a descriptor the kernel granted; the grant is what counts.
func closeFd(fd uintptr) { _ = unix.Close(int(fd)) }

func bpf(cmd int, attr unsafe.Pointer, size uintptr) error {
	fd, _, errno := unix.Syscall(unix.SYS_BPF, uintptr(cmd), uintptr(attr), size)
	if errno != 0 {
		return errno
	}
	closeFd(fd)
	return nil
}

func bpfMapCreate() error {
	// The leading fields of union bpf_attr for BPF_MAP_CREATE; the rest stays zero.
	var attr struct {
		mapType, keySize, valueSize, maxEntries, mapFlags uint32
		_                                                 [108]byte
	}
	attr.mapType, attr.keySize, attr.valueSize, attr.maxEntries = unix.BPF_MAP_TYPE_ARRAY, 4, 4, 1
	return bpf(unix.BPF_MAP_CREATE, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
}

func bpfProgLoad() error {
	// mov64 r0, 0; exit
	insns := [2]uint64{0x00000000000000b7, 0x0000000000000095}
	license := []byte("GPL\x00")
	var attr struct {
		progType, insnCnt uint32
		insns, license    uint64
		logLevel, logSize uint32
		logBuf            uint64
		kernVersion       uint32
		_                 [92]byte
	}
	attr.progType, attr.insnCnt = unix.BPF_PROG_TYPE_SOCKET_FILTER, 2
	attr.insns = uint64(uintptr(unsafe.Pointer(&insns[0])))
	attr.license = uint64(uintptr(unsafe.Pointer(&license[0])))
	return bpf(unix.BPF_PROG_LOAD, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
}

func addKey() error {
	_, err := unix.AddKey("user", "ceval-probe", []byte("probe"), unix.KEY_SPEC_SESSION_KEYRING)
	return err
}

func joinKeyring() error {
	_, err := unix.KeyctlJoinSessionKeyring("ceval-probe")
	return err
}

func ioUringSetup() error {
	var params [120]byte // struct io_uring_params, all zero
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
	if errno != 0 {
		return errno
	}
	closeFd(fd)
	return nil
}

func perfEventOpen() error {
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return err
	}
	closeFd(uintptr(fd))
	return nil
}

func userfaultfd(extra uintptr) error {
	fd, _, errno := unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|unix.O_NONBLOCK|extra, 0, 0)
	if errno != 0 {
		return errno
	}
	closeFd(fd)
	return nil
}

// unshareUser asks for a user namespace directly. A Go process has several threads, for
// which the kernel answers EINVAL; a seccomp filter answers first (EPERM), and cloneUser
// makes the attempt a single-threaded process could.
func unshareUser() error { return unix.Unshare(unix.CLONE_NEWUSER) }

// cloneUser starts this binary again as a child in a new user namespace; the child exits 0
// at once, so success means the clone was granted.
func cloneUser() error {
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{childEnv + "=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Wait()
}

func socket(domain, typ, proto int) error {
	fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return err
	}
	closeFd(uintptr(fd))
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
