// Package rdma is purerdma: a pure-Go (cgo-free) userspace RDMA library for
// Linux. It speaks the kernel's uverbs ABI (/dev/infiniband/uverbsN, the
// RDMA_VERBS_IOCTL ioctl and the legacy write() commands) and the umad device
// (/dev/infiniband/umadN) directly, the way libibverbs and libibumad from
// rdma-core do, without linking either.
//
// This package holds what every other package shares: the one error type
// [Error], the [ErrNotSupported] sentinel, and the domain types — [GID],
// [GUID], [NodeType], [PortState], [PhysState], [LinkLayer] and [DriverID]
// — that sysfs, uverbs, umad, counters and flow all use, so a value one
// package reads can be handed to another. Port numbers are plain ints
// everywhere. The work is done by the sub-packages:
//
//   - abi: the kernel ABI, generated from the Linux UAPI headers, plus the
//     pure encoders (uverbs ioctl requests, write/ex command framing, the
//     umad header). Corresponds to <rdma/*.h> and libibverbs' cmd_ioctl.h.
//   - sysfs, uverbs, umad, counters, flow: discovery, verbs objects, MADs,
//     verbs counters and flow steering (libibverbs, libibumad).
//   - cmd/purerdma: ibstat, ibstatus, perfquery and ibv_devinfo work-alikes.
//
// Every error the library returns carries the operation, the device and the
// errno. Test it with [errors.Is] against the errno itself (syscall.EBUSY),
// against [os.ErrPermission] (EPERM, EACCES), [os.ErrNotExist] (ENOENT,
// ENODEV, ENXIO) or [ErrNotSupported] (EPROTONOSUPPORT, EOPNOTSUPP, ENOTSUP);
// never compare errnos with ==.
package rdma
