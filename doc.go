// Package rdma is purerdma: a pure-Go (cgo-free) userspace RDMA library for
// Linux. It speaks the kernel's RDMA interfaces directly — the uverbs ABI
// (/dev/infiniband/uverbsN: the RDMA_VERBS_IOCTL ioctl and the legacy
// write() commands), the umad device (/dev/infiniband/umadN), the RDMA
// connection manager (/dev/infiniband/rdma_cm), sysfs and RDMA netlink —
// the way rdma-core's libibverbs, libibumad and librdmacm do, without
// linking them.
//
// This package holds what every other package shares: the one error type
// [Error], the [ErrNotSupported] sentinel, and the domain types — [GID],
// [GUID], [NodeType], [PortState], [PhysState], [LinkLayer] and [DriverID]
// — that the other packages all use, so a value one package reads can be
// handed to another. Port numbers are plain ints everywhere. The work is
// done by the sub-packages:
//
//   - abi: the kernel ABI, generated from the Linux UAPI headers, plus the
//     pure encoders (uverbs ioctl requests, write/ex command framing, the
//     umad header). Corresponds to <rdma/*.h> and libibverbs' cmd_ioctl.h.
//   - sysfs and rdmanl: discovery of devices, ports, GIDs and counters from
//     /sys and over RDMA netlink.
//   - uverbs: verbs contexts, objects, events and the data path
//     (libibverbs); counters and flow: verbs counters and flow steering.
//   - umad and umad/netdisc: MAD agents and fabric discovery (libibumad,
//     libibmad, libibnetdisc).
//   - rdmacm: the RDMA connection manager (librdmacm).
//   - cmd/purerdma: work-alikes of rdma-core's and iproute2's tools
//     (ibstat, ibv_devinfo, perfquery, ibnetdiscover, rping, rdma link, …);
//     cmd/rdma_exporter, a module of its own: the Prometheus exporter.
//
// Every error the library returns is an [*Error] carrying the operation,
// the device and the errno. Test it with [errors.Is] against the errno
// itself (syscall.EBUSY), against [os.ErrPermission] (EPERM, EACCES),
// [os.ErrNotExist] (ENOENT, ENODEV, ENXIO) or [ErrNotSupported]
// (EPROTONOSUPPORT, EOPNOTSUPP, ENOTSUP); never compare errnos with ==.
package rdma
