// Package abi is the Linux RDMA userspace ABI in Go: the types and numbers
// of the kernel UAPI headers <rdma/ib_user_ioctl_cmds.h>,
// <rdma/ib_user_ioctl_verbs.h>, <rdma/ib_user_verbs.h>,
// <rdma/ib_user_mad.h>, <rdma/mlx5-abi.h>, <rdma/mlx5_user_ioctl_cmds.h>,
// <rdma/mlx5_user_ioctl_verbs.h>, <rdma/rdma_user_rxe.h>,
// <rdma/rdma_netlink.h>, <rdma/rdma_user_ioctl.h> and
// <rdma/rdma_user_ioctl_cmds.h>, and the pure encoders that speak it. It
// corresponds to rdma-core's kernel-headers plus libibverbs' cmd_ioctl.h /
// cmd_write.h marshalling and libibumad's header handling.
//
// The generated part (ztypes_linux.go, zconsts_linux.go) comes from the
// Linux 6.12 headers through `go generate ./abi` (see
// internal/genabi/README.md); constants keep their C names
// (abi.RDMA_VERBS_IOCTL), structs become CamelCase types that name their C
// struct (struct ib_uverbs_ioctl_hdr is IbUverbsIoctlHdr). A test pins every
// struct's size and field offsets to the C compiler's.
//
// The hand-written part has no system calls:
//
//   - [Request] builds an RDMA_VERBS_IOCTL call and decodes what the kernel
//     writes back; [InvokeWrite] carries legacy write() commands over it.
//   - [APIFor] is the (object, method) → attribute table of a device, the
//     one source both the builder and internal/testmodel/fakekernel check against.
//   - write.go frames legacy write() and extended commands.
//   - umad.go encodes and decodes the umad header and agent registration
//     requests.
//
// Only little-endian 64-bit Linux (amd64, arm64) is supported.
package abi
