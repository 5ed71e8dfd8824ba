package sys

import "golang.org/x/sys/unix"

// MemlockLimit returns the process's RLIMIT_MEMLOCK soft limit in bytes
// (getrlimit(2)): how much memory it may lock or pin, which the kernel
// checks when a memory region is registered (ib_umem_get: pinned_vm
// against the limit, unless the process has CAP_IPC_LOCK). limited is
// false for RLIM_INFINITY or when the limit cannot be read.
func MemlockLimit() (limit uint64, limited bool) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil || r.Cur == unix.RLIM_INFINITY {
		return 0, false
	}
	return r.Cur, true
}

// SetMemlockLimit sets the process's RLIMIT_MEMLOCK soft limit to limit
// bytes (setrlimit(2); the hard limit is kept) and returns the previous
// soft limit, for tests that need a low one and restore it. An
// unprivileged process may lower the soft limit and raise it back up to
// the hard limit.
func SetMemlockLimit(limit uint64) (prev uint64, err error) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil {
		return 0, err
	}
	prev = r.Cur
	r.Cur = limit
	return prev, unix.Setrlimit(unix.RLIMIT_MEMLOCK, &r)
}
