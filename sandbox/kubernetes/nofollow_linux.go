package kubernetes

import "syscall"

const noFollow = syscall.O_NOFOLLOW
