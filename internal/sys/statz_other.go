//go:build !amd64 && !arm64

package sys

import "golang.org/x/sys/unix"

// fstatatZ is fstatat(2) of the NUL-terminated pathz relative to at
// through unix.Fstatat, which converts the path (the architectures the
// library is built and tested for use the raw call, statz_linux64.go).
func fstatatZ(at uintptr, pathz []byte, st *unix.Stat_t, flags int) error {
	return ignoringEINTR(func() error { return unix.Fstatat(int(int32(at)), zpath(pathz), st, flags) })
}
