package sys

import "golang.org/x/sys/unix"

// Yield offers the calling thread's CPU to another runnable thread
// (sched_yield(2)) and returns when the kernel schedules it again, at once
// when nothing else wants the CPU. A busy-polling loop calls it between
// empty polls so that work the kernel queued on this CPU — rxe's requester
// on Linux 6.12 runs in a workqueue on the CPU that rang the doorbell —
// runs now rather than at the end of the poller's timeslice.
//
// It is unix.Syscall, not a raw system call: the thread may stay off the
// CPU for a whole timeslice, and the Go scheduler should be free to hand
// its P to another goroutine meanwhile; the entersyscall bookkeeping is
// small beside a yield.
func Yield() { unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
