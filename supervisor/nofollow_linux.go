package supervisor

import "syscall"

const noFollow = syscall.O_NOFOLLOW
