package sys

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Adopter is implemented by a Backend whose calls can create descriptors
// (the fake uverbs device: the async event file, completion channels). Adopt
// returns the Backend of descriptor raw, which the Backend handed out, or an
// errno (EBADF when raw is not one of its descriptors).
type Adopter interface {
	Adopt(raw int) (Backend, error)
}

// Adopt takes ownership of raw, a descriptor the kernel created through a
// call on fd (for example the async event file that
// UVERBS_METHOD_ASYNC_EVENT_ALLOC returns in an attribute, or a completion
// channel), and returns it as an owned FD named name. The descriptor is
// switched to O_NONBLOCK and registered with the runtime poller, so read
// deadlines work and Close unblocks a pending read; it is counted by Live
// from now on.
//
// On error raw is closed (the caller owns nothing): the error is the errno,
// or os.ErrClosed when fd is closed. For a fake fd, the Backend must
// implement Adopter, else the error is EBADF.
func (fd *FD) Adopt(raw int, name string) (*FD, error) {
	if fd == nil {
		return nil, os.ErrClosed // raw is the kernel's only through an open fd
	}
	if fd.be != nil {
		if fd.closed.Load() {
			return nil, os.ErrClosed
		}
		a, ok := fd.be.(Adopter)
		if !ok {
			return nil, syscall.EBADF
		}
		be, err := a.Adopt(raw)
		if err != nil {
			return nil, err
		}
		return NewFake(name, be, true), nil
	}
	if raw < 0 {
		return nil, syscall.EBADF
	}
	if err := unix.SetNonblock(raw, true); err != nil {
		unix.Close(raw)
		return nil, err
	}
	return newPollable(raw, name)
}
