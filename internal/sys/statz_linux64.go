//go:build amd64 || arm64

package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// statZ is stat(2) (fstatat at AT_FDCWD, following links) of the
// NUL-terminated pathz, again on EINTR, without converting the path.
func statZ(pathz []byte, st *unix.Stat_t) error {
	for {
		_, _, e := unix.Syscall6(sysFstatat, atFDCWD, uintptr(unsafe.Pointer(&pathz[0])), uintptr(unsafe.Pointer(st)), 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}
