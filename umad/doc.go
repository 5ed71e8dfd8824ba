// Package umad sends and receives InfiniBand management datagrams (MADs)
// from userspace through the kernel's umad device, /dev/infiniband/umadN,
// without cgo: it is the Go counterpart of rdma-core's libibumad, and also
// holds the MAD codecs (the mad*.go files) that libibmad provides in C.
//
// # libibumad in Go
//
// Every function of libibumad has a counterpart with the same semantics:
//
//	umad_init                      Init (checks umad ABI 5); umad_done has no
//	                               counterpart: nothing global to release
//	umad_get_cas_names             CANames
//	umad_get_ca_portguids          CAPortGUIDs
//	umad_get_ca, umad_release_ca   LookupCA (a *CA is a Go value: nothing to release)
//	umad_get_port, umad_release_port  LookupPort (a *CAPort: nothing to release)
//	umad_open_port, umad_close_port   OpenPort, Port.Close
//	umad_register                  Port.Register
//	umad_register_oui              Port.RegisterOUI
//	umad_register2                 Port.RegisterAgent
//	umad_unregister                Port.Unregister
//	umad_send                      Port.Send
//	umad_recv                      Port.Recv, Port.RecvContext
//	umad_poll                      Port.Poll
//	umad_get_fd                    Port.FD
//	umad_alloc, umad_free          NewPacket (the garbage collector frees it)
//	umad_size                      HeaderSize, Packet.Size
//	umad_get_mad                   Packet.MAD
//	umad_status                    Packet.Status
//	umad_get_mad_addr              Packet.Addr
//	umad_set_addr, umad_set_addr_net  Packet.SetAddr, Packet.SetAddrNet
//	umad_set_grh, umad_set_grh_net    Packet.SetGRH, Packet.SetGRHNet (ClearGRH)
//	umad_set_pkey                  Packet.SetPKeyIndex
//	umad_dump, umad_addr_dump      Packet.String and Format (%+v), Addr.String
//	umad_debug                     SetDebug, SetLogger
//
// A CA and a CAPort are package sysfs' records (sysfs.CA, sysfs.Port,
// embedded) with libibumad's additions: the ports indexed by number, and
// GID 0's halves. The package-level functions read /sys and open
// /dev/infiniband; a Host value does the same on another sysfs tree
// (Host.Sysfs, a *sysfs.FS: fixtures in tests, a container's sysfs in
// tools) and device directory.
//
// # The common path
//
// Open a port, register an agent, send a request, receive the response:
//
//	port, err := umad.OpenPort("rxe0", 1)
//	agent, err := port.RegisterOUI(0x30, 0, 0x001405, umad.MethodMask{}) // a client
//	pkt := umad.NewPacket()
//	// ... write the MAD into pkt.MAD(), address it with SetAddr / SetGRH
//	err = port.Send(agent, pkt, 100*time.Millisecond, 3)
//	id, err := port.Recv(pkt, time.Second) // the response, or the request back with Status ETIMEDOUT
//
// A replier registers with a method mask, receives requests, turns each
// into its response in the same Packet (which keeps the sender's address)
// and sends it with timeout 0.
//
// # The kernel interface
//
// OpenPort opens the node O_RDWR|O_NONBLOCK through the runtime poller, so
// receives honour timeouts and contexts and Close unblocks them, and
// enables the 64-byte header (IB_USER_MAD_ENABLE_PKEY). Agents are
// registered with IB_USER_MAD_REGISTER_AGENT2, falling back to
// IB_USER_MAD_REGISTER_AGENT on kernels before 3.16. SMP classes need QP0,
// which RoCE ports (rxe, mlx5 in Ethernet mode) do not have: such
// registrations fail with an error matching ErrNotSupported. RoCE MADs
// need a GRH (Packet.SetGRH with the peer's GID). In steady state Send and
// Recv do not allocate.
//
// # Subnet Administration
//
// SAClient queries the SA (OpenSM's) as infiniband-diags' sa_get_handle
// and sa_query do: an agent of the SA class with kernel RMPP, a Get or
// GetTable of an SAQuery, the answer's records (SAResponse.Records) and
// their decoders (NodeRecord, PortInfoRecord, PathRecord, LinkRecord,
// SMInfoRecord, MCMemberRecord). The kernel reassembles an answer larger
// than one MAD; RMPPReassembler does it for an agent registered with
// UserRMPP. On an ibsim port an answer is its first 256 bytes, as
// libumad2sim delivers it (sa.go says why). The C counterparts:
//
//	sa_get_handle, sa_free_handle  NewSAClient, SAClient.Close
//	sa_query                       SAClient.Query, SAClient.GetTable
//	sa_get_query_rec               SAResponse.Records
//	ib_sa_err_str (sa_report_err)  SAStatusText
//	ib_*_record_t                  NodeRecord, PathRecord, … Decode
//
// # A simulated fabric
//
// OpenSimPort opens a
// port of an InfiniBand fabric that ibsim simulates, over ibsim's socket
// protocol instead of a kernel umad device: the same Port API, with the
// kernel's agent work done by the model of umad/internal/umadmodel. It is how
// the fabric tools are tested against infiniband-diags on the host
// (docs/ibsim.md). The package reads no environment variable: a program
// chooses the transport (cmd/purerdma's tools take PURERDMA_IBSIM) and the
// debug level (SetDebug; the tools take PURERDMA_UMAD_DEBUG).
//
// Errors are *Error values: the operation, the device and the cause; see
// Error for what errors.Is matches.
package umad
