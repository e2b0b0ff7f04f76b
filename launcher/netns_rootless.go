package launcher

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ListenHelperArg as a program's first argument makes it the listener helper
// (ListenHelperMain); ceval's main and the launcher tests' TestMain dispatch on it.
const ListenHelperArg = "__ceval-listen-in-netns"

// listenHelperFD is the helper's end of the socket pair the listener is sent over.
const listenHelperFD = 3

// ListenInNetns returns a TCP listener on addr inside the network namespace of pid, for a
// process without CAP_SYS_ADMIN (rootless): a Go process cannot setns into a user namespace
// (it is multi-threaded), so helper (a program that calls ListenHelperMain, normally ceval
// itself) runs through nsenter in pid's user and network namespaces, listens there and passes
// the socket back over SCM_RIGHTS. It joins no mount or PID namespace and exits at once, and
// the socket's namespace is checked against pid's before the listener is returned.
func ListenInNetns(pid uint32, addr, helper string) (_ net.Listener, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("listen in the netns of %d: socket pair: %w", pid, err)
	}
	ours := os.NewFile(uintptr(fds[0]), "listen-helper")
	defer ours.Close()
	theirs := os.NewFile(uintptr(fds[1]), "listen-helper-child")
	var stderr bytes.Buffer
	cmd := exec.Command(nsenterTool, "-U", "-n", "--preserve-credentials", "-t", strconv.FormatUint(uint64(pid), 10),
		"--", helper, ListenHelperArg, addr)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.Stderr = &stderr
	cmd.ExtraFiles = []*os.File{theirs} // fd 3
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		return nil, fmt.Errorf("listen in the netns of %d: start helper: %w", pid, err)
	}
	// One byte and the socket, or EOF when the helper exits without sending.
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, rerr := unix.Recvmsg(fds[0], buf, oob, unix.MSG_CMSG_CLOEXEC)
	werr := cmd.Wait()
	fd, perr := receivedFD(oob[:oobn])
	if fd >= 0 {
		defer func() {
			if err != nil {
				unix.Close(fd)
			}
		}()
	}
	if rerr != nil || werr != nil || perr != nil {
		return nil, fmt.Errorf("listen on %s in the netns of %d: %w: %s", addr, pid, errors.Join(rerr, werr, perr), strings.TrimSpace(stderr.String()))
	}
	if err := sameNetns(fd, pid); err != nil {
		return nil, fmt.Errorf("listen on %s in the netns of %d: %w", addr, pid, err)
	}
	f := os.NewFile(uintptr(fd), "listener")
	l, err := net.FileListener(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("listen on %s in the netns of %d: %w", addr, pid, err)
	}
	fd = -1
	return l, nil
}

// receivedFD returns the one file descriptor an SCM_RIGHTS message carried, or -1.
func receivedFD(oob []byte) (int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return -1, err
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			return -1, err
		}
		fds = append(fds, got...)
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("helper sent %d file descriptors, want one socket", len(fds))
	}
	return fds[0], nil
}

// sameNetns checks that socket fd lives in pid's network namespace (SIOCGSKNS).
func sameNetns(fd int, pid uint32) error {
	nsfd, err := unix.IoctlRetInt(fd, unix.SIOCGSKNS)
	if err != nil {
		return fmt.Errorf("the socket's network namespace: %w", err)
	}
	defer unix.Close(nsfd)
	var got, want unix.Stat_t
	if err := unix.Fstat(nsfd, &got); err != nil {
		return err
	}
	if err := unix.Stat("/proc/"+strconv.FormatUint(uint64(pid), 10)+"/ns/net", &want); err != nil {
		return err
	}
	if got.Dev != want.Dev || got.Ino != want.Ino {
		return errors.New("the helper's socket is not in the container's network namespace")
	}
	return nil
}

// ListenHelperMain is the helper ListenInNetns runs (args: the address): it listens on the
// address in the namespaces nsenter put it in, sends the socket over fd 3 and returns the
// exit code.
func ListenHelperMain(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: "+ListenHelperArg+" ADDR")
		return 2
	}
	l, err := net.Listen("tcp", args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := unix.Sendmsg(listenHelperFD, []byte{0}, unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
		fmt.Fprintln(os.Stderr, "send the listener:", err)
		return 1
	}
	return 0
}
