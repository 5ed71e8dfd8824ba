// Package rdmanl is an RDMA netlink client: the Go counterpart of
// iproute2's rdma tool (rdma/*.c) over RDMA_NL_NLDEV, the nldev family of
// NETLINK_RDMA (kernel include/uapi/rdma/rdma_netlink.h,
// drivers/infiniband/core/nldev.c). It gives
//
//   - the device list ([Conn.Devices], "rdma dev show") and a port's
//     state ([Conn.Port], "rdma link show");
//   - a port's hardware counters read fresh from the driver
//     ([Conn.PortStats], "rdma statistic show link"), the QP counters and
//     the counter mode ([Conn.QPCounters], [Conn.CounterMode]);
//   - the resources the kernel tracks ([Conn.ResourceSummaries],
//     [Conn.Resources], "rdma resource show");
//   - the character device of a device or port with its ABI and, for
//     uverbs, the driver id ([Conn.Chardev], GET_CHARDEV, what
//     libibverbs and libibumad ask);
//   - software devices ([Conn.LinkAdd], [Conn.LinkDelete], "rdma link
//     add/delete").
//
// It does not give GIDs, P_Keys or rates; package sysfs does.
//
// Requests and replies go over a blocking netlink socket, as libnl's do
// for rdma-core and iproute2, with a pooled receive buffer; the replies
// are decoded here, by a walker that trusts no length; the decoders are
// fuzzed.
//
// # Errors
//
// Errors are [*Error] values (rdma.Error): the operation, the device
// ("index 3", "index 3/1" for a port, or its name) and the cause, the
// errno the kernel answered. [errors.Is] matches them against the errno,
// os.ErrNotExist (no such device), [ErrNotSupported] (no RDMA netlink:
// ib_core is not loaded) and os.ErrClosed (a request on a closed [Conn]).
// A reply that is not in the kernel's format gives a [*ParseError] naming
// the attribute.
package rdmanl
