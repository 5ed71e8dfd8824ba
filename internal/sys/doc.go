// Package sys is purerdma's one syscall seam: every open, ioctl, read, write,
// mmap, munmap and poll the library makes goes through it, and it is the only
// package that imports golang.org/x/sys/unix for them (the model is
// cilium/ebpf's internal/sys and internal/unix).
//
// An [FD] is an owned file descriptor: opened with O_CLOEXEC, closed exactly
// once however often Close is called, and counted so tests can prove nothing
// leaks ([Live]). A descriptor opened with O_NONBLOCK goes through the Go
// runtime poller, so read deadlines work and Close unblocks a pending read;
// it joins the poller when a call first needs it, and a read with a context
// that cannot be done ([FD.ReadContext]) waits in epoll_wait(2) instead,
// which Close unblocks too.
//
// Files the library or a tool did not create (sysfs attributes) are read
// only through [ReadFile], [ReadString], [ReadFileFS], [OpenFile] and
// [OpenFS]: the file must be regular (a FIFO, a device node or a directory
// is an error naming it, found before it is opened; under the running
// system's sysfs, which holds none of those, the check is left out and a
// directory is EISDIR from read) and may hold at most the caller's buffer,
// one page ([AttrMax]) for an attribute.
//
// Unit tests replace the kernel behind a descriptor with a [Backend] (see
// internal/testmodel/fakekernel); the library code above the seam runs unchanged.
//
// Memory whose address the kernel reads from a u64 field must stay alive and
// unmoved for the call: pass the objects that own it as the keep arguments of
// [FD.Ioctl], and allocate it on the heap (store its pointer in a heap
// object, as abi.Request does) — never on a goroutine stack.
package sys
