package sys

import "golang.org/x/sys/unix"

// sysFstatat is fstatat's number: newfstatat on amd64.
const sysFstatat = unix.SYS_NEWFSTATAT
