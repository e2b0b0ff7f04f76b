//go:build unix

package importer

import "syscall"

const noFollow = syscall.O_NOFOLLOW

// nonBlock makes an open of a FIFO return at once instead of waiting for a writer.
const nonBlock = syscall.O_NONBLOCK
