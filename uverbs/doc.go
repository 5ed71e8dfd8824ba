// Package uverbs is the verbs object layer of purerdma: it opens an RDMA
// device's uverbs node, creates the user context and the objects on it, and
// queries device, port and GID attributes — what libibverbs from rdma-core
// does, without cgo. It speaks the kernel's RDMA_VERBS_IOCTL interface
// (abi.Request), carrying the legacy write() commands through
// UVERBS_METHOD_INVOKE_WRITE, so it needs Linux 5.x or later (tested on 6.1
// and 6.12).
//
// The C API it corresponds to:
//
//	ibv_get_device_list, ibv_get_device_name, ibv_get_device_guid  Devices, LookupDevice, Device
//	ibv_open_device, ibv_close_device                              Open, OpenDevice, Context.Close
//	ibv_query_device_ex                                            Context.QueryDevice
//	ibv_query_port                                                 Context.QueryPort
//	ibv_query_gid_table, ibv_query_gid_ex                          Context.QueryGIDTable, Context.QueryGID
//	ibv_alloc_pd, ibv_dealloc_pd                                   Context.AllocPD (AllocPDInto), PD.Close
//	ibv_create_comp_channel, ibv_destroy_comp_channel              Context.CreateCompChannel, CompChannel.Close
//	ibv_get_cq_event                                               CompChannel.GetEvent
//	ibv_create_cq, ibv_destroy_cq, ibv_req_notify_cq               Context.CreateCQ (CreateCQInto), CQ.Close, CQ.ReqNotify
//	ibv_create_qp, ibv_modify_qp, ibv_query_qp, ibv_destroy_qp     PD.CreateQP (CreateQPInto), QP.Modify, QP.Query, QP.Close
//	ibv_get_async_event                                            Context.AsyncEvent
//	ibv_reg_mr, ibv_dereg_mr                                       PD.AllocMR (mmap + ibv_reg_mr), PD.RegMR, MR.Close
//	ibv_create_ah, ibv_destroy_ah                                  PD.CreateAH, AH.Close
//	ibv_post_send                                                  QP.PostSend
//	ibv_post_recv                                                  QP.PostRecv
//	ibv_create_srq, ibv_modify_srq, ibv_query_srq, ibv_destroy_srq PD.CreateSRQ, SRQ.Modify, SRQ.Query, SRQ.Close
//	ibv_post_srq_recv                                              SRQ.PostRecv
//	ibv_poll_cq                                                    CQ.Poll
//
// # Providers
//
// What a driver needs beyond the core ABI (rdma-core's providers/*) is
// chosen by the device's driver id, which discovery learns from RDMA
// netlink (GET_CHARDEV "uverbs") or infers from sysfs:
//
//   - rxe (Soft-RoCE): no driver data on the context and PD; CQ and QP
//     responses carry the mmap offsets of their queues, which are mapped
//     from the device file.
//   - mlx5 (ConnectX): alloc_ucontext request v2 with CQE version 1 and
//     dynamic UARs (one UAR object per context, mapped); CQ and QP buffers
//     and doorbell records in anonymous memory outside the Go heap; full
//     driver output buffers where mlx5 writes without checking; RAW_PACKET
//     QPs with a separate send queue and a 24-bit user index.
//   - generic (Options.Generic): no driver data, for drivers without a
//     provider: queries, PDs and events where the driver accepts that; CQs
//     and QPs fail with ErrNotSupported. Without Generic such drivers fail
//     Open with ErrNotSupported naming the driver.
//
// # Data path
//
// On rxe, QP.PostSend, QP.PostRecv and CQ.Poll work on the queues the QP
// and CQ share with the kernel, like rdma-core's providers/rxe: receives
// and polls make no system call, a send rings the kernel with one raw
// write(); none of them allocates. Registered memory must stay put while
// the device uses it, so it never is Go heap memory: PD.AllocMR maps it
// outside the heap and owns it, and PD.RegMR refuses memory the library
// did not map. The memory ordering and the differences between Linux 6.1
// and 6.12 are reasoned in rxe_data.go. On mlx5 the same methods write
// and read the formats of rdma-core's providers/mlx5 (mlx5_data.go),
// tested against a fake device only: unproven on hardware; UD sends and
// completion events there fail with ErrNotSupported. PostSend posts
// sends, RDMA writes and reads, and the atomics (WRAtomicCmpAndSwp,
// WRAtomicFetchAndAdd; DeviceAttr.AtomicCap says whether the device has
// them). Completion events:
// CQ.ReqNotify and CompChannel.GetEvent, which honours a context.Context
// and is woken by Close.
//
// # Objects and teardown
//
// A Context owns what is created through it. Closing a Context destroys
// what is left in the kernel's dependency order (the flows and counters
// objects of packages flow and counters, then QPs, SRQs, CQs, AHs, MRs, PDs,
// completion channels), then the driver's resources, the async event file
// and the device file. Every method is safe for concurrent use; Close waits for
// calls in flight, and calls after it fail with an error matching
// os.ErrClosed. When the device is removed while open, calls fail with
// EIO and Close still succeeds.
//
// The plain create methods allocate the object they return (one
// allocation; the requests come from reused memory). A program that
// creates and destroys PDs, CQs or QPs at a high rate can create into an
// object it keeps instead, a zero one or one it closed, and allocate
// nothing: Context.AllocPDInto, Context.CreateCQInto, PD.CreateQPInto.
//
// # Errors
//
// Errors are *Error values carrying the operation, the device name and the
// errno. Test them with errors.Is: against the errno (syscall.EBUSY),
// os.ErrPermission (EPERM, EACCES), os.ErrNotExist (ENOENT, ENODEV, ENXIO),
// ErrNotSupported (EPROTONOSUPPORT, EOPNOTSUPP, ENOTSUP), os.ErrClosed.
// Invalid arguments wrap syscall.EINVAL and are reported before any system
// call.
// A nil pointer is an invalid argument too: every method of one returns an
// error wrapping EINVAL (Close included), or zero values where the method
// returns no error; none panics.
package uverbs
