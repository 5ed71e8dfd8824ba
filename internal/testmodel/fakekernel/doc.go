// Package fakekernel is a strict, in-process stand-in for the kernel's
// uverbs device, for unit tests. It sits behind the real syscall seam
// (internal/sys): code under test opens an *sys.FD from Kernel.Open and runs
// unchanged, while the fake validates every RDMA_VERBS_IOCTL exactly as
// Linux 6.12 does (drivers/infiniband/core/uverbs_ioctl.c) and answers with
// the kernel's errnos:
//
//   - an ioctl number other than RDMA_VERBS_IOCTL: ENOTTY;
//   - header length ≠ 24 + 16 × num_attrs, or above one page: EINVAL;
//   - reserved1 or reserved2 non-zero: EPROTONOSUPPORT;
//   - driver_id other than the device's: EINVAL;
//   - (object, method) not in the device's tree: EPROTONOSUPPORT;
//   - a disassociated device: EIO;
//   - per attribute, in array order: unknown and MANDATORY:
//     EPROTONOSUPPORT (unknown and optional: ignored); given twice: EINVAL;
//     then the kind's own rules (lengths, reserved attr_data, zero tails,
//     enum variants, handles: ENOENT/EINVAL/EBUSY, descriptors: EBADF);
//   - a mandatory attribute missing: EINVAL;
//   - FLAGS_IN with unknown bits or a length other than 4 or 8, CONST_IN
//     out of range: EINVAL (the kernel's handlers check these);
//   - destroying an object something still uses: EBUSY;
//   - a handler answering EPROTONOSUPPORT is turned into EINVAL.
//
// Flag bits of an attribute other than UVERBS_ATTR_F_MANDATORY are ignored,
// as the kernel ignores them.
//
// What a method does once the framework accepts it is the test's Handler:
// it is function-shaped, in the manner of mdlayher/netlink's nltest. Later
// packages add per-method and per-driver rules as handlers.
//
// Verbs (verbs*.go) is such a handler: a simulated device implementing the
// methods package uverbs uses — GET_CONTEXT, QUERY_CONTEXT, QUERY_PORT,
// QUERY_GID_TABLE/ENTRY, async event files, CQ and QP create/destroy,
// PD destroy, and the legacy commands QUERY_DEVICE, EX_QUERY_DEVICE,
// QUERY_PORT, ALLOC_PD, CREATE_COMP_CHANNEL, REQ_NOTIFY_CQ, MODIFY_QP and
// QUERY_QP through INVOKE_WRITE — with the kernel's checks and errnos, the
// QP state machine, and the driver rules of rxe (RXE, rxe.go) and mlx5
// (MLX5, mlx5.go). Kernel.HandleMmap and Kernel.HandleClose let it model
// mmap of driver pages and observe teardown; Kernel.HandleIoctl lets a
// test hold calls at the kernel's door, before the fake takes any lock; descriptors the device creates
// (async event files, completion channels) are adopted through
// sys.FD.Adopt (File implements sys.Adopter).
//
// For mlx5 it also plays the device's data path (mlx5_data.go):
// Verbs.Mlx5Run reads the send WQEs userspace wrote, checks the doorbell
// record and the UAR doorbell, executes them in loopback and writes CQEs
// with the owner bit; Verbs.Mlx5Frames and Verbs.Mlx5Deliver are the wire
// of RAW_PACKET QPs.
//
// The umad device is not here: package umad/internal/umadmodel models it
// (user_mad.c and mad.c), for umad's unit tests and for umad's ibsim
// transport, which is production code. Nothing outside tests imports
// fakekernel.
package fakekernel
