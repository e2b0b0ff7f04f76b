// Command quotahold is the agent of the concurrent-quota test: it takes inotify instances up
// to its first argument and POSIX message queues (10 x 8 KiB each) until the kernel refuses
// one, prints "inotify N mqueue M", creates /workspace/held, and with a second argument
// "hold" keeps them all until /workspace/release appears (watched through one of the
// instances it holds). It exits 0 only when it got every inotify instance it asked for and
// at least one queue.
package main

import (
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	want, err := strconv.Atoi(os.Args[1])
	if err != nil {
		panic(err)
	}
	var fds []int
	for len(fds) < want {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if err != nil {
			fmt.Fprintf(os.Stderr, "inotify_init #%d: %v\n", len(fds)+1, err)
			break
		}
		fds = append(fds, fd)
	}
	queues := 0
	for ; queues < 256; queues++ {
		name, _ := unix.BytePtrFromString("ceval-quota-" + strconv.Itoa(queues))
		attr := struct {
			flags, maxmsg, msgsize, curmsgs int64
			pad                             [4]int64
		}{maxmsg: 10, msgsize: 8192}
		_, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name)), uintptr(unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC), 0o600, uintptr(unsafe.Pointer(&attr)), 0, 0)
		if e != 0 {
			fmt.Fprintf(os.Stderr, "mq_open #%d: %v\n", queues+1, e)
			break
		}
	}
	fmt.Printf("inotify %d mqueue %d\n", len(fds), queues)
	if len(os.Args) > 2 && os.Args[2] == "hold" && len(fds) > 0 {
		if _, err := unix.InotifyAddWatch(fds[0], "/workspace", unix.IN_CREATE); err != nil {
			panic(err)
		}
		if err := os.WriteFile("/workspace/held", nil, 0o644); err != nil {
			panic(err)
		}
		buf := make([]byte, 4096)
		for {
			if _, err := os.Stat("/workspace/release"); err == nil {
				break
			}
			if _, err := unix.Read(fds[0], buf); err != nil {
				panic(err)
			}
		}
	} else if err := os.WriteFile("/workspace/held", nil, 0o644); err != nil {
		panic(err)
	}
	if len(fds) < want || queues == 0 {
		os.Exit(1)
	}
}
