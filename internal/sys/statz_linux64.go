//go:build amd64 || arm64

package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// fstatatZ is fstatat(2) (with flags: 0 follows links) of the NUL-terminated pathz
// relative to the directory descriptor at (atFDCWD: stat(2)), again on
// EINTR, without converting the path.
func fstatatZ(at uintptr, pathz []byte, st *unix.Stat_t, flags int) error {
	for {
		_, _, e := unix.Syscall6(sysFstatat, at, uintptr(unsafe.Pointer(&pathz[0])), uintptr(unsafe.Pointer(st)), uintptr(flags), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}
