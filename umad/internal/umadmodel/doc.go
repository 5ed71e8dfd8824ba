// Package umadmodel models the kernel side of a umad device,
// /dev/infiniband/umadN, as Linux 6.12's
// drivers/infiniband/core/user_mad.c and the MAD layer under it
// (drivers/infiniband/core/mad.c) present it to userspace: agents and
// their registration rules, the ports' method tables, TID routing of
// responses, send lists with timeouts and retries, receive queues, and
// read, write and ioctl with the kernel's checks in its order and its
// errnos. Fabric's documentation lists the rules.
//
// A File sits behind a real *sys.FD (it implements sys.Backend and
// sys.Waiter), so code above the internal/sys seam runs unchanged on it.
//
// It has two users:
//
//   - the unit tests of package umad, which open ports of a Fabric whose
//     MADs go between its own ports, in place of the kernel;
//   - umad's ibsim transport (umad.OpenSimPort, PURERDMA_IBSIM), a
//     production path: there a Fabric's Wire leads to the ibsim
//     simulator's sockets (Wire, StallWire, Fabric.Deliver, Fabric.Fail),
//     so a port of a simulated InfiniBand fabric runs the same agent model
//     as the unit tests check.
//
// It therefore belongs to neither: internal/testmodel/fakekernel, the strict fake
// uverbs kernel for unit tests, is not linked into production code.
package umadmodel
