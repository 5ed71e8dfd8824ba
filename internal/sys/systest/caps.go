package systest

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SetEffectiveNetRaw raises or drops CAP_NET_RAW in the effective set of
// every thread of the process (capset(2) through AllThreadsSyscall, so
// that the runtime's other threads agree), for tests of what an
// unprivileged caller sees.
func SetEffectiveNetRaw(on bool) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	bit := uint32(1) << unix.CAP_NET_RAW
	if on {
		data[0].Effective |= bit
	} else {
		data[0].Effective &^= bit
	}
	_, _, e := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	runtime.KeepAlive(&data)
	if e != 0 {
		return fmt.Errorf("capset on every thread: %w", e)
	}
	return nil
}
