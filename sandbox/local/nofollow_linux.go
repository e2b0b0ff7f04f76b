package local

import "syscall"

const noFollow = syscall.O_NOFOLLOW
