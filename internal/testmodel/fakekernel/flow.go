package fakekernel

// Flow steering: the write commands EX_CREATE_FLOW and EX_DESTROY_FLOW (over
// INVOKE_WRITE) and UVERBS_METHOD_FLOW_DESTROY, with the core's rules
// (drivers/infiniband/core/uverbs_cmd.c: ib_uverbs_ex_create_flow,
// kern_spec_to_ib_spec*, ib_uverbs_ex_destroy_flow; uverbs_std_types.c:
// uverbs_free_flow) and mlx5's (drivers/infiniband/hw/mlx5/fs.c:
// mlx5_ib_create_flow, _create_flow_rule, parse_flow_attr,
// is_valid_ethertype), uverbs_cmd.c ib_uverbs_ex_create_flow, kern_spec_to_ib_spec_filter; mlx5 fs.c parse_flow_attr. Drivers without create_flow
// (rxe and every driver but mlx5 and mlx4 in 6.12) answer EOPNOTSUPP; mlx4
// is not modelled (also EOPNOTSUPP).
//
// The spec parsing here is written from the kernel's code, not shared
// with package flow, so that unit tests compare two readings of the ABI.

import (
	"encoding/binary"
	"sync/atomic"
	"syscall"

	"github.com/purerdma/rdma/abi"
)

func init() {
	writeCmds[abi.IB_USER_VERBS_CMD_FLAG_EXTENDED|abi.IB_USER_VERBS_EX_CMD_CREATE_FLOW] = writeCmd{"EX_CREATE_FLOW", 0, 0, (*Verbs).wCreateFlow}
	writeCmds[abi.IB_USER_VERBS_CMD_FLAG_EXTENDED|abi.IB_USER_VERBS_EX_CMD_DESTROY_FLOW] = writeCmd{"EX_DESTROY_FLOW", 0, 0, (*Verbs).wDestroyFlow}
	objectHandlers[abi.UVERBS_OBJECT_FLOW] = (*Verbs).flowIoctl
}

// Kernel-internal numbers (enum ib_flow_spec_type, enum ib_flow_attr_type,
// enum ib_flow_flags, IB_FLOW_SPEC_SUPPORT_LAYERS): not in the UAPI.
const (
	specEth    = 0x20
	specIPv4   = 0x30
	specIPv6   = 0x31
	specESP    = 0x34
	specTCP    = 0x40
	specUDP    = 0x41
	specVXLAN  = 0x50
	specGRE    = 0x51
	specMPLS   = 0x60
	specInner  = 0x100
	actTag     = 0x1000
	actDrop    = 0x1001
	actHandle  = 0x1002
	actCount   = 0x1003
	attrNormal = 0
	attrAllDef = 1
	attrMCDef  = 2
	attrSniff  = 3
	flDontTrap = 1 << 1
	flEgress   = 1 << 2
	flReserved = 1 << 3
	maxLayers  = 10
	// unionSize is sizeof(struct ib_uverbs_flow_spec), the largest user
	// spec (IPv6).
	unionSize = 88
	// mlx5LastPrio is MLX5_IB_FLOW_LAST_PRIO.
	mlx5LastPrio = 15
)

// filterSize is offsetof(struct ib_flow_*_filter, real_sz): how much of a
// user filter the kernel keeps; bytes past it must be zero in the mask.
var filterSize = map[uint32]int{
	specEth: 16, specIPv4: 12, specIPv6: 39, specTCP: 4, specUDP: 4,
	specVXLAN: 4, specESP: 8, specGRE: 8, specMPLS: 4,
}

// kspec is a spec as the core hands it to the driver: filter value and
// mask zero-extended to the kernel's filter size, or an action.
type kspec struct {
	typ       uint32
	val, mask []byte
	tag       uint32
	obj       *Object // COUNT: the counters; HANDLE: the flow action
}

// flowVal is the model of a flow.
type flowVal struct {
	qp       *Object
	counters []*Object // the core's resources (normally at most one)
	actions  []*Object
	attr     abi.IbUverbsFlowAttr
	specs    []kspec
	bound    *Object // the counters object mlx5 attached to the rule
	// sentPairs is how many (description, index) pairs the driver data
	// carried for bound, -1 for none (ncounters_data 0).
	sentPairs int
	seq       uint64
}

// flowSeq orders flows by creation, for ReceiveFrames' ties.
var flowSeq atomic.Uint64

// wCreateFlow is ib_uverbs_ex_create_flow followed by the driver's
// create_flow.
func (v *Verbs) wCreateFlow(c *Call, in []byte) error {
	if v.DriverID != abi.RDMA_DRIVER_MLX5 {
		return syscall.EOPNOTSUPP // no create_flow: the method is not registered
	}
	le := binary.LittleEndian
	// uverbs_request_start
	if len(in) < 24 {
		return syscall.ENOSPC
	}
	if le.Uint32(in[0:]) != 0 { // comp_mask
		return syscall.EINVAL
	}
	if !v.NetRaw {
		return syscall.EPERM
	}
	attr := *fromBytes[abi.IbUverbsFlowAttr](in[8:24])
	if attr.Flags >= flReserved {
		return syscall.EINVAL
	}
	if attr.Flags&flDontTrap != 0 && (attr.Type == attrAllDef || attr.Type == attrMCDef) {
		return syscall.EINVAL
	}
	if attr.NumOfSpecs > maxLayers {
		return syscall.EINVAL
	}
	if int(attr.Size) > int(attr.NumOfSpecs)*unionSize {
		return syscall.EINVAL
	}
	if attr.Reserved[0] != 0 || attr.Reserved[1] != 0 {
		return syscall.EINVAL
	}
	rest := in[24:]
	var specBytes []byte
	if attr.NumOfSpecs > 0 {
		// uverbs_request_next
		if len(rest) < int(attr.Size) {
			return syscall.ENOSPC
		}
		specBytes, rest = rest[:attr.Size], rest[attr.Size:]
	}
	// uverbs_request_finish
	for _, b := range rest {
		if b != 0 {
			return syscall.EOPNOTSUPP
		}
	}
	// uobj_alloc
	fo, err := c.create(abi.UVERBS_OBJECT_FLOW, false)
	if err != nil {
		return err
	}
	// rdma_is_port_valid
	if attr.Port < 1 || int(attr.Port) > len(v.Ports) {
		return syscall.EINVAL
	}
	// uobj_get_obj_read: an unknown handle is ENOENT, another object's
	// EINVAL. (The fake answered EINVAL for both until the real core on
	// mock0 answered ENOENT, on 6.1 and 6.12: docs/mock0.md.)
	qpo, err := c.lookup(abi.UVERBS_OBJECT_QP, le.Uint32(in[4:]))
	if err != nil {
		return err
	}
	qp := qpo.Value.(*qpVal)
	if qp.typ != qptUD && qp.typ != qptRaw {
		return syscall.EINVAL
	}
	fv := &flowVal{qp: qpo, attr: attr}
	release := func() {
		for _, o := range fv.counters {
			o.Users--
		}
		for _, o := range fv.actions {
			o.Users--
		}
	}
	size := int(attr.Size)
	b := specBytes
	i := 0
	for ; i < int(attr.NumOfSpecs) && size >= 8 && size >= int(le.Uint16(b[4:])); i++ {
		s, err := v.kernSpec(c, b, fv)
		if err != nil {
			release()
			return err
		}
		fv.specs = append(fv.specs, s)
		n := int(le.Uint16(b[4:]))
		size -= n
		b = b[n:]
	}
	if size != 0 || i != int(attr.NumOfSpecs) {
		release()
		return syscall.EINVAL
	}
	if err := v.mlx5CreateFlow(c, fv); err != nil {
		release()
		return err
	}
	qpo.Users++
	fv.seq = flowSeq.Add(1)
	fo.Value = fv
	switch {
	case fv.bound == nil:
		v.logf("create flow %d", fo.Handle)
	case fv.sentPairs < 0:
		v.logf("create flow %d counters %d no pairs", fo.Handle, fv.bound.Handle)
	default:
		v.logf("create flow %d counters %d pairs %d", fo.Handle, fv.bound.Handle, fv.sentPairs)
	}
	resp := make([]byte, 8)
	le.PutUint32(resp[4:], fo.Handle)
	return response(c, resp)
}

// kernSpec is kern_spec_to_ib_spec for the spec at the start of b (the
// loop guarantees 8 ≤ its size ≤ len(b)).
func (v *Verbs) kernSpec(c *Call, b []byte, fv *flowVal) (kspec, error) {
	le := binary.LittleEndian
	typ, size := le.Uint32(b[0:]), int(le.Uint16(b[4:]))
	if le.Uint16(b[6:]) != 0 {
		return kspec{}, syscall.EINVAL
	}
	s := kspec{typ: typ}
	if typ >= actTag {
		switch typ {
		case actTag:
			if size != 16 {
				return s, syscall.EINVAL
			}
			s.tag = le.Uint32(b[8:])
		case actDrop:
			if size != 8 {
				return s, syscall.EINVAL
			}
		case actHandle:
			if size != 16 {
				return s, syscall.EOPNOTSUPP
			}
			o, err := c.lookup(abi.UVERBS_OBJECT_FLOW_ACTION, le.Uint32(b[8:]))
			if err != nil {
				return s, syscall.EINVAL
			}
			o.Users++
			fv.actions = append(fv.actions, o)
			s.obj = o
		case actCount:
			if size != 16 {
				return s, syscall.EINVAL
			}
			o, err := c.lookup(abi.UVERBS_OBJECT_COUNTERS, le.Uint32(b[8:]))
			if err != nil {
				return s, syscall.EINVAL
			}
			o.Users++
			fv.counters = append(fv.counters, o)
			s.obj = o
		default:
			return s, syscall.EINVAL
		}
		return s, nil
	}
	// kern_spec_to_ib_spec_filter
	if size < 8 {
		return s, syscall.EINVAL
	}
	flen := (size - 8) / 2
	val, mask := b[8:8+flen], b[8+flen:8+2*flen]
	if flen%4 != 0 {
		return s, syscall.EINVAL
	}
	if typ == specInner|specVXLAN {
		return s, syscall.EINVAL
	}
	real, ok := filterSize[typ&^specInner]
	if !ok {
		return s, syscall.EINVAL
	}
	actual := flen
	if flen > real {
		for _, x := range mask[real:] {
			if x != 0 {
				return s, syscall.EINVAL
			}
		}
		actual = real
	}
	if actual <= 0 {
		return s, syscall.EINVAL
	}
	s.val, s.mask = make([]byte, real), make([]byte, real)
	copy(s.val, val[:actual])
	copy(s.mask, mask[:actual])
	be := binary.BigEndian
	switch typ &^ specInner {
	case specIPv6:
		if be.Uint32(s.mask[32:]) >= 1<<20 || be.Uint32(s.val[32:]) >= 1<<20 {
			return s, syscall.EINVAL
		}
	case specVXLAN:
		if be.Uint32(s.mask[0:]) >= 1<<24 || be.Uint32(s.val[0:]) >= 1<<24 {
			return s, syscall.EINVAL
		}
	}
	return s, nil
}

// mlx5CreateFlow is mlx5_ib_create_flow.
func (v *Verbs) mlx5CreateFlow(c *Call, fv *flowVal) error {
	le := binary.LittleEndian
	var ucmd []byte
	if in := c.UHWIn(); len(in) > 0 {
		if len(in) < 8 {
			return syscall.EOPNOTSUPP
		}
		ncd := le.Uint32(in[0:])
		if ncd > 1 {
			return syscall.EINVAL
		}
		req := 8 + 16*int(ncd)
		if len(in) > req {
			for _, x := range in[req:] {
				if x != 0 {
					return syscall.EOPNOTSUPP
				}
			}
		}
		if len(in) < req {
			return syscall.EFAULT // ib_copy_from_udata reads past the buffer
		}
		ucmd = in[:req]
	}
	a := fv.attr
	if a.Priority > mlx5LastPrio {
		return syscall.ENOMEM
	}
	if a.Flags&^(flDontTrap|flEgress) != 0 {
		return syscall.EINVAL
	}
	egress := a.Flags&flEgress != 0
	if egress && (a.Type == attrAllDef || a.Type == attrMCDef) {
		return syscall.EINVAL
	}
	switch a.Type {
	case attrNormal:
		return v.mlx5FlowRule(fv, ucmd)
	case attrAllDef, attrMCDef, attrSniff:
		// Built from static specs: the user's specs are not looked at.
		return nil
	}
	return syscall.EINVAL
}

// mlx5FlowRule is _create_flow_rule for a NORMAL flow.
func (v *Verbs) mlx5FlowRule(fv *flowVal, ucmd []byte) error {
	if !validEthertype(fv.specs, false) || !validEthertype(fv.specs, true) {
		return syscall.EINVAL
	}
	var proto [2]struct{ mask, val uint8 } // outer, inner ip_protocol
	setProto := func(inner bool, mask, val uint8) error {
		p := &proto[0]
		if inner {
			p = &proto[1]
		}
		if mask == 0 {
			return nil
		}
		if p.mask == 0 {
			p.mask, p.val = mask, val
			return nil
		}
		if mask != p.mask || val != p.val {
			return syscall.EINVAL
		}
		return nil
	}
	var counters *Object
	for _, s := range fv.specs {
		inner := s.typ&specInner != 0
		switch s.typ &^ specInner {
		case specEth, specVXLAN, specMPLS:
		case specIPv4:
			if s.mask[10] != 0 || s.mask[11] != 0 { // past tos: ttl, flags
				return syscall.EOPNOTSUPP
			}
			if err := setProto(inner, s.mask[8], s.val[8]); err != nil {
				return err
			}
		case specIPv6:
			if s.mask[38] != 0 { // past traffic_class: hop_limit
				return syscall.EOPNOTSUPP
			}
			if err := setProto(inner, s.mask[36], s.val[36]); err != nil {
				return err
			}
		case specESP:
			return syscall.EOPNOTSUPP
		case specTCP:
			if err := setProto(inner, 0xff, 6); err != nil {
				return err
			}
		case specUDP:
			if err := setProto(inner, 0xff, 17); err != nil {
				return err
			}
		case specGRE:
			if s.mask[0] != 0 || s.mask[1] != 0 {
				return syscall.EOPNOTSUPP
			}
			if err := setProto(inner, 0xff, 47); err != nil {
				return err
			}
		case actTag:
			if s.tag >= 1<<24 {
				return syscall.EINVAL
			}
		case actDrop:
		case actHandle:
			// No flow action object of the model can be used here.
			return syscall.EOPNOTSUPP
		case actCount:
			if counters != nil {
				return syscall.EINVAL // one counters spec per flow
			}
			counters = s.obj
		default:
			return syscall.EINVAL
		}
	}
	if counters != nil {
		if err := v.setCountersData(counters.Value.(*countersVal), ucmd); err != nil {
			return err
		}
		fv.bound = counters
		fv.sentPairs = -1
		if len(ucmd) >= 24 && binary.LittleEndian.Uint32(ucmd) != 0 {
			fv.sentPairs = int(binary.LittleEndian.Uint32(ucmd[16:]))
		}
	}
	return nil
}

// validEthertype is is_valid_ethertype: an Ethernet spec that matches the
// ethertype must match it whole and agree with an IPv4 or IPv6 spec of the
// same (outer or inner) headers.
func validEthertype(specs []kspec, inner bool) bool {
	bit := uint32(0)
	if inner {
		bit = specInner
	}
	hasEthertype, maskValid := false, true
	var ethType uint16
	var ipType uint32
	for _, s := range specs {
		switch s.typ {
		case specEth | bit:
			if m := binary.BigEndian.Uint16(s.mask[12:]); m != 0 {
				maskValid = m == 0xffff
				hasEthertype = true
				ethType = binary.BigEndian.Uint16(s.val[12:])
			}
		case specIPv4 | bit, specIPv6 | bit:
			ipType = s.typ
		}
	}
	valid := !hasEthertype || ipType == 0
	if !valid && maskValid {
		valid = (ethType == 0x0800 && ipType == specIPv4|bit) || (ethType == 0x86dd && ipType == specIPv6|bit)
	}
	return valid
}

// wDestroyFlow is ib_uverbs_ex_destroy_flow.
func (v *Verbs) wDestroyFlow(c *Call, in []byte) error {
	if v.DriverID != abi.RDMA_DRIVER_MLX5 {
		return syscall.EOPNOTSUPP
	}
	req, err := request(in, 8)
	if err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(req[0:]) != 0 {
		return syscall.EINVAL
	}
	o, err := c.lookup(abi.UVERBS_OBJECT_FLOW, binary.LittleEndian.Uint32(req[4:]))
	if err != nil {
		return err
	}
	v.freeFlow(o)
	c.File.remove(o)
	return nil
}

// flowIoctl is UVERBS_METHOD_FLOW_DESTROY (the framework looked the handle
// up and removes the object when this succeeds).
func (v *Verbs) flowIoctl(c *Call) error {
	if c.Header.MethodID != abi.UVERBS_METHOD_FLOW_DESTROY {
		return ErrNoHandler
	}
	v.freeFlow(c.Object(abi.UVERBS_ATTR_DESTROY_FLOW_HANDLE))
	return nil
}

// freeFlow is uverbs_free_flow: the driver's destroy_flow (mlx5 forgets the
// counters' description when this flow is its last user), then the flow's
// resources are released and the QP's reference dropped.
func (v *Verbs) freeFlow(o *Object) {
	fv := o.Value.(*flowVal)
	v.clearCountersDescription(fv.bound)
	for _, r := range fv.counters {
		r.Users--
	}
	for _, r := range fv.actions {
		r.Users--
	}
	fv.qp.Users--
	v.logf("destroy flow %d", o.Handle)
}

// FlowTraffic counts packets and bytes on the flow with handle h, as the
// device does for every packet its rule matches: they go to the hardware
// counter of the counters object mlx5 attached to the rule. It reports
// whether a flow with that handle exists (on any open file; tests open one
// context at a time).
func (v *Verbs) FlowTraffic(h uint32, packets, bytes uint64) bool {
	for _, f := range v.Kernel().filesList() {
		f.mu.Lock()
		o := f.objects[h]
		ok := o != nil && o.Type == abi.UVERBS_OBJECT_FLOW
		if ok {
			v.count(o.Value.(*flowVal), packets, bytes)
		}
		f.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

func (v *Verbs) count(fv *flowVal, packets, bytes uint64) {
	if fv.bound == nil {
		return
	}
	cv := fv.bound.Value.(*countersVal)
	v.mu.Lock()
	cv.packets += packets
	cv.bytes += bytes
	v.mu.Unlock()
}

// ReceiveFrames delivers n Ethernet frames of size bytes each, addressed to
// dst, on port: the NORMAL ingress flow with an ETH spec that matches dst
// under its mask and the lowest priority number (the oldest among equals)
// takes them, and its counters, if any, count them, as one hardware rule
// hit per frame. It returns the handle of that flow and whether there was
// one.
func (v *Verbs) ReceiveFrames(port uint8, dst [6]byte, n, size uint64) (uint32, bool) {
	var best *flowVal
	var bestH uint32
	var bestF *File
	files := v.Kernel().filesList()
	for _, f := range files {
		f.mu.Lock()
		for h, o := range f.objects {
			fv, ok := o.Value.(*flowVal)
			if !ok || o.Type != abi.UVERBS_OBJECT_FLOW || fv.attr.Type != attrNormal || fv.attr.Port != port || fv.attr.Flags&flEgress != 0 {
				continue
			}
			if !matchesDst(fv.specs, dst) {
				continue
			}
			if best == nil || fv.attr.Priority < best.attr.Priority || (fv.attr.Priority == best.attr.Priority && fv.seq < best.seq) {
				best, bestH, bestF = fv, h, f
			}
		}
		f.mu.Unlock()
	}
	if best == nil {
		return 0, false
	}
	bestF.mu.Lock()
	v.count(best, n, n*size)
	bestF.mu.Unlock()
	return bestH, true
}

func matchesDst(specs []kspec, dst [6]byte) bool {
	found := false
	for _, s := range specs {
		if s.typ != specEth {
			continue
		}
		found = true
		for i := 0; i < 6; i++ {
			if dst[i]&s.mask[i] != s.val[i]&s.mask[i] {
				return false
			}
		}
	}
	return found
}
