// Package counters is purerdma's verbs counters: counters objects that count
// the packets and bytes of flows, with the semantics of libibverbs' man pages
// ibv_attach_counters_point_flow(3) and ibv_read_counters(3), and the
// self-describing counter sets of the "Verbs Counters" RFC (linux-rdma)
// built from what today's kernels offer.
//
// The C API it corresponds to:
//
//	ibv_create_counters             Create
//	ibv_attach_counters_point_flow  Object.Attach
//	ibv_read_counters               Object.Read
//	ibv_destroy_counters            Object.Close
//	ibv_create_flow, ibv_destroy_flow (with IBV_FLOW_SPEC_ACTION_COUNT)
//	                                package flow: flow.Create with a flow.Count, Flow.Close
//	(RFC) ibv_query_counter_set_description, ibv_query_counter_set
//	                                Describe, Set.Read
//
// # Counters objects
//
// A counters object (UVERBS_OBJECT_COUNTERS) is created empty. Counter
// points say what it counts and where the values go: Attach(AttachAttr{Desc:
// Packets, Index: 0}, nil) puts the packet count at index 0 of what Read
// returns. The object starts counting when it is bound to a flow: the flow is
// created (flow.Create) with a Count action naming it. This is the "static"
// attach of the man page, the only one mlx5 — the one Linux driver with
// counters — supports; a dynamic attach (to an existing flow) fails with
// ENOTSUP.
//
// The rules, as the man pages state them and rdma-core and the kernel
// implement them (mlx5 counters.c mlx5_ib_flow_counters_set_data and mlx5_ib_read_counters, fs.c mlx5_ib_create_flow, uverbs_std_types_counters.c; docs/mock0.md):
//
//   - values are zero at creation and only grow;
//   - once bound, no further attach (EBUSY) until no flow uses the object;
//   - one object on several flows accumulates all of them into the same
//     indexes (they share one hardware counter); an index attached more
//     than once sums its descriptions;
//   - Read fills len(values) entries: shorter than the largest attached
//     index + 1 is EINVAL, longer is fine; an object no flow uses cannot be
//     read (EINVAL);
//   - destroying a bound object fails with EBUSY.
//
// The binding state is rdma-core's (providers/mlx5): the first flow bound to
// the object sends its counter points to the kernel (driver data of
// EX_CREATE_FLOW), later ones send none, and when the last flow is destroyed
// the kernel forgets them, so the next flow sends them again. Object keeps
// that count; it holds for flows created through package flow.
//
// # Counter sets
//
// Describe lists what a device offers, each set with the object it counts,
// whether its values are cached, and its counters' names, and Set.Read reads
// any of them into a []uint64:
//
//   - flow counters (packets, bytes) where the driver has counters objects
//     (mlx5); a bound object's set comes from Object.AsSet;
//   - port counters of sysfs counters/ (the PMA; not on rxe), where
//     port_xmit_data and port_rcv_data are converted to octets by
//     sysfs.DataOctets, the one place that does it;
//   - port hardware counters of sysfs hw_counters/ (cached by the kernel for
//     hw_counters/lifespan) and of RDMA netlink (read fresh, like "rdma
//     statistic show").
//
// Reads of counters objects and of sysfs sets do not allocate.
//
// # Errors
//
// Errors are *Error values carrying the operation, the device and the
// errno, with a message that says which rule was met. Test them with
// errors.Is: against the errno (syscall.EBUSY, syscall.EINVAL,
// syscall.ENOTSUP), ErrNotSupported (EPROTONOSUPPORT, EOPNOTSUPP, ENOTSUP:
// on rxe, creating counters is ErrNotSupported), os.ErrClosed.
// A nil pointer is an invalid argument too: every method of one returns an
// error wrapping EINVAL (Close included), or zero values where the method
// returns no error; none panics.
package counters
