// Package flow is purerdma's flow steering: rules that steer the packets
// they match to a QP, drop them, tag them or count them, as libibverbs'
// ibv_create_flow(3) creates them.
//
// The C API it corresponds to:
//
//	ibv_create_flow              Create
//	ibv_destroy_flow             Flow.Close
//	struct ibv_flow_attr         Attr
//	struct ibv_flow_spec_*       Eth, IPv4, IPv6, TCP, UDP, VXLAN, GRE, MPLS, ESP,
//	                             Tag, Drop, Handle, Count
//
// # Specs
//
// Every spec the kernel accepts from userspace is a value that serializes
// itself to the kernel's struct ib_uverbs_flow_spec_* (AppendBinary,
// MarshalBinary): the header's type and size, and the attribute's size and
// spec count, are computed. Filters have a value and a mask; the Inner field
// matches the inner headers of a tunnel. IPv4 is sent in its full 32-byte
// form (rdma-core's plain IPv4 spec sends 24; the kernel accepts both).
// DecodeSpec, DecodeSpecs and Attr.UnmarshalBinary read the wire form back
// under the kernel's rules.
//
// # Flows
//
// Create sends EX_CREATE_FLOW through UVERBS_METHOD_INVOKE_WRITE; Close
// sends UVERBS_METHOD_FLOW_DESTROY (or EX_DESTROY_FLOW). A flow needs
// CAP_NET_RAW (os.ErrPermission otherwise) and a UD or RAW_PACKET QP; only
// mlx5 (and mlx4 in device-managed steering mode) implement flows, so on rxe
// every flow is ErrNotSupported. A Count action binds a counters object
// (package counters); on mlx5 the first flow bound to it carries its counter
// points as driver data (struct mlx5_ib_create_flow). One Count per flow.
//
// The kernel's checks, in the order ib_uverbs_ex_create_flow makes them, are
// listed in uverbs_cmd.c ib_uverbs_ex_create_flow, in its order; docs/mock0.md; the fake kernel (internal/testmodel/fakekernel) applies
// them and mlx5's, and the tests pin the order.
//
// # Errors
//
// Errors are *Error values carrying the operation, the device and the
// errno. Test them with errors.Is: against the errno, os.ErrPermission
// (missing CAP_NET_RAW), ErrNotSupported.
// A nil pointer is an invalid argument too: every method of one returns an
// error wrapping EINVAL (Close included), or zero values where the method
// returns no error; none panics.
package flow
