//go:build unix

package importer

import "syscall"

const noFollow = syscall.O_NOFOLLOW
