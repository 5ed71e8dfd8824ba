package sys

import "golang.org/x/sys/unix"

// sysFstatat is fstatat's number on arm64 (the generic table's).
const sysFstatat = unix.SYS_FSTATAT
