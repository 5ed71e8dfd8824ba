package rdmanl

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
)

// Resource tracking over RDMA netlink: what "rdma resource show" prints,
// from the kernel's restrack (drivers/infiniband/core/nldev.c:
// nldev_res_get_dumpit and fill_res_info for the summary,
// res_get_common_dumpit and fill_res_{qp,cm_id,cq,mr,pd,ctx}_entry for
// the objects).

// ResourceSummary is one device's object counts (a line of "rdma
// resource show").
type ResourceSummary struct {
	Index  uint32
	Device string
	// Counts are the (name, current count) pairs in the kernel's order:
	// pd, cq, qp, cm_id, mr, ctx, srq (fill_res_info's names).
	Counts []NamedCounter
}

// ResourceSummaries lists every device's object counts, by device index.
func (n *Conn) ResourceSummaries() ([]ResourceSummary, error) {
	msgs, err := n.run(abi.RDMA_NLDEV_CMD_RES_GET, syscall.NLM_F_DUMP, nil)
	if err != nil {
		return nil, &Error{Op: "netlink resource summary", Err: err}
	}
	out := make([]ResourceSummary, 0, len(msgs))
	for _, m := range msgs {
		s, err := decodeResSummary(m)
		if err != nil {
			return nil, &Error{Op: "netlink resource summary", Err: err}
		}
		out = append(out, s)
	}
	return out, nil
}

// ResourceKind is a kind of tracked object.
type ResourceKind int

// The kinds "rdma resource show" lists.
const (
	ResQP ResourceKind = iota
	ResCMID
	ResCQ
	ResMR
	ResPD
	ResCtx
)

// resKinds is indexed by ResourceKind (an array, not a map: no code at
// package initialization).
var resKinds = [...]struct {
	name        string
	cmd, table  uint16
	entry       uint16
	linkObjects bool // shown per port ("link DEV/PORT")
}{
	ResQP:   {"qp", abi.RDMA_NLDEV_CMD_RES_QP_GET, abi.RDMA_NLDEV_ATTR_RES_QP, abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY, true},
	ResCMID: {"cm_id", abi.RDMA_NLDEV_CMD_RES_CM_ID_GET, abi.RDMA_NLDEV_ATTR_RES_CM_ID, abi.RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY, true},
	ResCQ:   {"cq", abi.RDMA_NLDEV_CMD_RES_CQ_GET, abi.RDMA_NLDEV_ATTR_RES_CQ, abi.RDMA_NLDEV_ATTR_RES_CQ_ENTRY, false},
	ResMR:   {"mr", abi.RDMA_NLDEV_CMD_RES_MR_GET, abi.RDMA_NLDEV_ATTR_RES_MR, abi.RDMA_NLDEV_ATTR_RES_MR_ENTRY, false},
	ResPD:   {"pd", abi.RDMA_NLDEV_CMD_RES_PD_GET, abi.RDMA_NLDEV_ATTR_RES_PD, abi.RDMA_NLDEV_ATTR_RES_PD_ENTRY, false},
	ResCtx:  {"ctx", abi.RDMA_NLDEV_CMD_RES_CTX_GET, abi.RDMA_NLDEV_ATTR_RES_CTX, abi.RDMA_NLDEV_ATTR_RES_CTX_ENTRY, false},
}

// ParseResourceKind is the kind called s ("qp", "cm_id", "cq", "mr",
// "pd", "ctx").
func ParseResourceKind(s string) (ResourceKind, bool) {
	for k, v := range resKinds {
		if v.name == s {
			return ResourceKind(k), true
		}
	}
	return 0, false
}

func (k ResourceKind) String() string {
	if k >= 0 && int(k) < len(resKinds) {
		return resKinds[k].name
	}
	return fmt.Sprintf("ResourceKind(%d)", int(k))
}

// PerPort says whether objects of the kind belong to a port (QPs and CM
// IDs, shown as "link DEV/PORT").
func (k ResourceKind) PerPort() bool {
	return k >= 0 && int(k) < len(resKinds) && resKinds[k].linkObjects
}

// ResourceObject is one tracked object. The kernel sends only the
// attributes that apply (a kernel object has KernName and no PID, a user
// object the reverse; PDN, CTXN are sent for user objects only), so each
// is present or not; the maps hold the numeric attributes by their
// RDMA_NLDEV_ATTR_* type.
type ResourceObject struct {
	Index    uint32
	Device   string
	Port     *uint32
	PID      *uint32
	KernName *string
	// An rdma_cm ID's addresses (RDMA_NLDEV_ATTR_RES_SRC_ADDR and
	// DST_ADDR, a struct __kernel_sockaddr_storage), when the kernel
	// sent an IPv4 or IPv6 one.
	SrcAddr, DstAddr *netip.AddrPort
	U8               map[uint16]uint8
	U32              map[uint16]uint32
	U64              map[uint16]uint64
}

// resAttrWidth is the width of every numeric attribute an object entry
// may hold (nldev.c's nla_put_u8/u32/u64 calls for it).
func resAttrWidth(typ uint16) int {
	switch typ {
	case abi.RDMA_NLDEV_ATTR_RES_TYPE,
		abi.RDMA_NLDEV_ATTR_RES_STATE,
		abi.RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE,
		abi.RDMA_NLDEV_ATTR_RES_POLL_CTX,
		abi.RDMA_NLDEV_ATTR_DEV_DIM:
		return 1
	case abi.RDMA_NLDEV_ATTR_RES_LQPN,
		abi.RDMA_NLDEV_ATTR_RES_RQPN,
		abi.RDMA_NLDEV_ATTR_RES_RQ_PSN,
		abi.RDMA_NLDEV_ATTR_RES_SQ_PSN,
		abi.RDMA_NLDEV_ATTR_RES_PS,
		abi.RDMA_NLDEV_ATTR_RES_CQE,
		abi.RDMA_NLDEV_ATTR_RES_RKEY,
		abi.RDMA_NLDEV_ATTR_RES_LKEY,
		abi.RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY,
		abi.RDMA_NLDEV_ATTR_RES_UNSAFE_GLOBAL_RKEY,
		abi.RDMA_NLDEV_ATTR_RES_PDN,
		abi.RDMA_NLDEV_ATTR_RES_CQN,
		abi.RDMA_NLDEV_ATTR_RES_MRN,
		abi.RDMA_NLDEV_ATTR_RES_CM_IDN,
		abi.RDMA_NLDEV_ATTR_RES_CTXN:
		return 4
	case abi.RDMA_NLDEV_ATTR_RES_USECNT,
		abi.RDMA_NLDEV_ATTR_RES_IOVA,
		abi.RDMA_NLDEV_ATTR_RES_MRLEN:
		return 8
	}
	return 0
}

// Resources lists the objects of a kind on the device with index devIndex,
// in the kernel's order (by restrack id). The kernel answers EINVAL for an
// unknown device index.
func (n *Conn) Resources(kind ResourceKind, devIndex uint32) ([]ResourceObject, error) {
	if kind < 0 || int(kind) >= len(resKinds) {
		return nil, &Error{Op: "netlink resource get", Err: syscall.EINVAL}
	}
	k := resKinds[kind]
	op := "netlink resource " + k.name + " get"
	dev := fmt.Sprintf("index %d", devIndex)
	msgs, err := n.run(k.cmd, syscall.NLM_F_DUMP, []nlAttr{{abi.RDMA_NLDEV_ATTR_DEV_INDEX, u32(devIndex)}})
	if err != nil {
		return nil, &Error{Op: op, Device: dev, Err: err}
	}
	var out []ResourceObject
	for _, m := range msgs {
		objs, err := decodeResObjects(m, k.table, k.entry)
		if err != nil {
			return nil, &Error{Op: op, Device: dev, Err: err}
		}
		out = append(out, objs...)
	}
	return out, nil
}

// decodeResSummary decodes one device of a RES_GET reply: DEV_INDEX,
// DEV_NAME and a RES_SUMMARY nest of RES_SUMMARY_ENTRY nests, each a name
// and a u64 count.
func decodeResSummary(b []byte) (ResourceSummary, error) {
	var s ResourceSummary
	var haveIndex, haveName, haveTable bool
	it := attrIter{b: b}
	for it.next() {
		var err error
		switch it.typ {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			s.Index, err = attrU32(it.typ, it.val)
			haveIndex = true
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			s.Device, err = attrString(it.typ, it.val)
			haveName = true
		case abi.RDMA_NLDEV_ATTR_RES_SUMMARY:
			if haveTable {
				return ResourceSummary{}, fmt.Errorf("nldev RES_GET reply with two RES_SUMMARY tables")
			}
			haveTable = true
			s.Counts, err = decodeResSummaryTable(it.val)
		}
		if err != nil {
			return ResourceSummary{}, err
		}
	}
	if it.err != nil {
		return ResourceSummary{}, it.err
	}
	if !haveIndex || !haveName || !haveTable {
		return ResourceSummary{}, fmt.Errorf("nldev RES_GET reply without the device index, name or RES_SUMMARY")
	}
	return s, nil
}

func decodeResSummaryTable(b []byte) ([]NamedCounter, error) {
	return decodeNamedTable(b, abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY,
		abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR,
		"without a name or a count")
}

// decodeResObjects decodes one message of a RES_*_GET dump: DEV_INDEX,
// DEV_NAME and a table nest of entry nests.
func decodeResObjects(b []byte, table, entry uint16) ([]ResourceObject, error) {
	return decodeDevEntries(b, table, entry, "nldev resource reply", decodeResObject,
		func(o *ResourceObject, idx uint32, name string) { o.Index, o.Device = idx, name })
}

// decodeDevEntries decodes a dump message that names its device (DEV_INDEX,
// DEV_NAME) and holds a table nest of entry nests, each decoded by decode
// and given the device by setDev; what names the reply in errors.
func decodeDevEntries[T any](b []byte, table, entry uint16, what string,
	decode func([]byte) (T, error), setDev func(*T, uint32, string)) ([]T, error) {
	var idx uint32
	var name string
	var haveIndex, haveName bool
	var raw [][]byte
	it := attrIter{b: b}
	for it.next() {
		var err error
		switch it.typ {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			idx, err = attrU32(it.typ, it.val)
			haveIndex = true
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			name, err = attrString(it.typ, it.val)
			haveName = true
		case table:
			t := attrIter{b: it.val}
			for t.next() {
				if t.typ == entry {
					raw = append(raw, t.val)
				}
			}
			err = t.err
		}
		if err != nil {
			return nil, err
		}
	}
	if it.err != nil {
		return nil, it.err
	}
	if !haveIndex || !haveName {
		return nil, fmt.Errorf("%s without the device index or name", what)
	}
	out := make([]T, 0, len(raw))
	for _, r := range raw {
		v, err := decode(r)
		if err != nil {
			return nil, err
		}
		setDev(&v, idx, name)
		out = append(out, v)
	}
	return out, nil
}

func decodeResObject(b []byte) (ResourceObject, error) {
	o := ResourceObject{U8: map[uint16]uint8{}, U32: map[uint16]uint32{}, U64: map[uint16]uint64{}}
	it := attrIter{b: b}
	for it.next() {
		var err error
		switch it.typ {
		case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
			var v uint32
			if v, err = attrU32(it.typ, it.val); err == nil {
				o.Port = &v
			}
		case abi.RDMA_NLDEV_ATTR_RES_PID:
			var v uint32
			if v, err = attrU32(it.typ, it.val); err == nil {
				o.PID = &v
			}
		case abi.RDMA_NLDEV_ATTR_RES_KERN_NAME:
			var s string
			if s, err = attrString(it.typ, it.val); err == nil {
				o.KernName = &s
			}
		case abi.RDMA_NLDEV_ATTR_RES_SRC_ADDR:
			o.SrcAddr = sockaddrPort(it.val)
		case abi.RDMA_NLDEV_ATTR_RES_DST_ADDR:
			o.DstAddr = sockaddrPort(it.val)
		default:
			switch resAttrWidth(it.typ) {
			case 1:
				o.U8[it.typ], err = attrU8(it.typ, it.val)
			case 4:
				o.U32[it.typ], err = attrU32(it.typ, it.val)
			case 8:
				o.U64[it.typ], err = attrU64(it.typ, it.val)
			}
		}
		if err != nil {
			return ResourceObject{}, err
		}
	}
	if it.err != nil {
		return ResourceObject{}, it.err
	}
	return o, nil
}

// Port is one port of an nldev PORT_GET reply (fill_port_info in
// nldev.c; a line of "rdma link show"). The InfiniBand attributes are
// sent for InfiniBand ports only, the netdev for ports that have one in
// the caller's network namespace.
type Port struct {
	Index     uint32
	Device    string
	Port      int
	State     rdma.PortState
	PhysState rdma.PhysState
	// InfiniBand only.
	CapFlags     *uint64
	SubnetPrefix *uint64
	LID, SMLID   *uint32
	LMC          *uint8
	// The port's netdev (RoCE, iWARP).
	NetdevIndex *uint32
	Netdev      *string
}

// Port reads one port of the device with index devIndex (like "rdma link
// show DEV/PORT"). The kernel answers EINVAL for an unknown device or
// port.
func (n *Conn) Port(devIndex uint32, port int) (*Port, error) {
	dev := fmt.Sprintf("index %d/%d", devIndex, port)
	msgs, err := n.run(abi.RDMA_NLDEV_CMD_PORT_GET, 0, []nlAttr{
		{abi.RDMA_NLDEV_ATTR_DEV_INDEX, u32(devIndex)},
		{abi.RDMA_NLDEV_ATTR_PORT_INDEX, u32(uint32(port))},
	})
	if err != nil {
		return nil, &Error{Op: "netlink port get", Device: dev, Err: err}
	}
	if len(msgs) != 1 {
		return nil, &Error{Op: "netlink port get", Device: dev, Err: fmt.Errorf("the kernel sent %d replies, want 1", len(msgs))}
	}
	p, err := decodePort(msgs[0])
	if err != nil {
		return nil, &Error{Op: "netlink port get", Device: dev, Err: err}
	}
	return &p, nil
}

func decodePort(b []byte) (Port, error) {
	var p Port
	var haveIndex, haveName, havePort, haveState, havePhys bool
	it := attrIter{b: b}
	for it.next() {
		var err error
		switch it.typ {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			p.Index, err = attrU32(it.typ, it.val)
			haveIndex = true
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			p.Device, err = attrString(it.typ, it.val)
			haveName = true
		case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
			var v uint32
			v, err = attrU32(it.typ, it.val)
			p.Port = int(v)
			havePort = true
		case abi.RDMA_NLDEV_ATTR_PORT_STATE:
			var v uint8
			v, err = attrU8(it.typ, it.val)
			p.State = rdma.PortState(v)
			haveState = true
		case abi.RDMA_NLDEV_ATTR_PORT_PHYS_STATE:
			var v uint8
			v, err = attrU8(it.typ, it.val)
			p.PhysState = rdma.PhysState(v)
			havePhys = true
		case abi.RDMA_NLDEV_ATTR_CAP_FLAGS:
			var v uint64
			if v, err = attrU64(it.typ, it.val); err == nil {
				p.CapFlags = &v
			}
		case abi.RDMA_NLDEV_ATTR_SUBNET_PREFIX:
			var v uint64
			if v, err = attrU64(it.typ, it.val); err == nil {
				p.SubnetPrefix = &v
			}
		case abi.RDMA_NLDEV_ATTR_LID:
			var v uint32
			if v, err = attrU32(it.typ, it.val); err == nil {
				p.LID = &v
			}
		case abi.RDMA_NLDEV_ATTR_SM_LID:
			var v uint32
			if v, err = attrU32(it.typ, it.val); err == nil {
				p.SMLID = &v
			}
		case abi.RDMA_NLDEV_ATTR_LMC:
			var v uint8
			if v, err = attrU8(it.typ, it.val); err == nil {
				p.LMC = &v
			}
		case abi.RDMA_NLDEV_ATTR_NDEV_INDEX:
			var v uint32
			if v, err = attrU32(it.typ, it.val); err == nil {
				p.NetdevIndex = &v
			}
		case abi.RDMA_NLDEV_ATTR_NDEV_NAME:
			var s string
			if s, err = attrString(it.typ, it.val); err == nil {
				p.Netdev = &s
			}
		}
		if err != nil {
			return Port{}, err
		}
	}
	if it.err != nil {
		return Port{}, it.err
	}
	if !haveIndex || !haveName || !havePort || !haveState || !havePhys {
		return Port{}, fmt.Errorf("nldev PORT_GET reply without the device index, name, port, state or physical state")
	}
	return p, nil
}

// sockaddrPort decodes a struct sockaddr_in or sockaddr_in6 (at the start
// of a __kernel_sockaddr_storage: the family in host order, then the port
// and the address in network order), or returns nil for another family or
// a short one, which iproute2 (res-cmid.c ss_ntop) leaves out too.
func sockaddrPort(b []byte) *netip.AddrPort {
	if len(b) < 2 {
		return nil
	}
	var ap netip.AddrPort
	switch binary.NativeEndian.Uint16(b) {
	case syscall.AF_INET:
		if len(b) < 8 {
			return nil
		}
		ap = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:]))
	case syscall.AF_INET6:
		if len(b) < 24 {
			return nil
		}
		ap = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), binary.BigEndian.Uint16(b[2:]))
	default:
		return nil
	}
	return &ap
}
