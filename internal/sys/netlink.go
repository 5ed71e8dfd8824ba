package sys

import (
	"time"

	"golang.org/x/sys/unix"
)

// OpenNetlink opens a netlink socket of protocol proto (SOCK_RAW,
// SOCK_CLOEXEC) for request and reply exchanges with the kernel, as
// libnl's clients do: blocking, with send and receive timeouts of timeout
// (a receive past it fails with EAGAIN), not registered with the runtime
// poller. Write sends a request to the kernel (an unbound netlink socket's
// default peer; the kernel binds it on the first send) and Read receives
// one datagram. The kernel answers a request at once, so a Read waits at
// most timeout, which also bounds how long Close waits for it.
func OpenNetlink(proto int, timeout time.Duration) (*FD, error) {
	raw, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return nil, err
	}
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	for _, opt := range []int{unix.SO_RCVTIMEO, unix.SO_SNDTIMEO} {
		if err := unix.SetsockoptTimeval(raw, unix.SOL_SOCKET, opt, &tv); err != nil {
			unix.Close(raw)
			return nil, err
		}
	}
	return newFD("netlink socket", &osFD{name: "netlink socket", raw: raw}), nil
}
