//go:build !amd64 && !arm64

package sys

import "golang.org/x/sys/unix"

// statZ is stat(2) of the NUL-terminated pathz through unix.Stat, which
// converts the path (the architectures the library is built and tested
// for use the raw call, statz_linux64.go).
func statZ(pathz []byte, st *unix.Stat_t) error {
	return ignoringEINTR(func() error { return unix.Stat(zpath(pathz), st) })
}
