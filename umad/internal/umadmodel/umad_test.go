package umadmodel

import (
	"encoding/binary"
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
)

// One test per rule of the modelled umad device (Fabric's documentation),
// each driven through the real syscall seam with hand-made bytes.

var (
	umadGIDA = [16]byte{0xfe, 0x80, 15: 0x0a}
	umadGIDB = [16]byte{0xfe, 0x80, 15: 0x0b}
	umadGIDR = [16]byte{0xfe, 0x80, 15: 0x0c}
	umadGIDS = [16]byte{0xfe, 0x80, 15: 0x0d}
)

// umadNet is a fabric with two InfiniBand ports (LIDs 1 and 2) and two
// RoCE ports.
type umadNet struct {
	fab          *Fabric
	ib1, ib2     *Port
	roce1, roce2 *Port
}

func newUmadNet(t *testing.T) *umadNet {
	fab := NewFabric()
	t.Cleanup(func() {
		for _, p := range fab.ports {
			if n := p.OpenFiles(); n != 0 {
				t.Errorf("%s: %d files still open", p.Config().CA, n)
			}
		}
	})
	return &umadNet{
		fab:   fab,
		ib1:   fab.AddPort(PortConfig{CA: "mlx5_0", Port: 1, LID: 1, GID: umadGIDA}),
		ib2:   fab.AddPort(PortConfig{CA: "mlx5_1", Port: 1, LID: 2, GID: umadGIDB}),
		roce1: fab.AddPort(PortConfig{CA: "rxe0", Port: 1, LinkLayer: Ethernet, GID: umadGIDR}),
		roce2: fab.AddPort(PortConfig{CA: "rxe1", Port: 1, LinkLayer: Ethernet, GID: umadGIDS}),
	}
}

// umadOpen opens p, closed with the test.
func umadOpen(t *testing.T, p *Port) (*File, *sys.FD) {
	t.Helper()
	f, fd, err := p.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fd.Close() })
	return f, fd
}

// umadOpenPKey opens p and enables the 64-byte header, as libibumad does.
func umadOpenPKey(t *testing.T, p *Port) (*File, *sys.FD) {
	t.Helper()
	f, fd := umadOpen(t, p)
	if err := fd.Ioctl(abi.IB_USER_MAD_ENABLE_PKEY, nil); err != nil {
		t.Fatal(err)
	}
	return f, fd
}

func umadReg2(fd *sys.FD, r abi.RegReq2) (uint32, error) {
	b := make([]byte, abi.RegReq2Size)
	if err := r.Encode(b); err != nil {
		return 0, err
	}
	err := fd.Ioctl(abi.IB_USER_MAD_REGISTER_AGENT2, unsafe.Pointer(&b[0]), b)
	return binary.LittleEndian.Uint32(b), err
}

func umadReg1(fd *sys.FD, r abi.RegReq) (uint32, error) {
	b := make([]byte, abi.RegReqSize)
	if err := r.Encode(b); err != nil {
		return 0, err
	}
	err := fd.Ioctl(abi.IB_USER_MAD_REGISTER_AGENT, unsafe.Pointer(&b[0]), b)
	return binary.LittleEndian.Uint32(b), err
}

func umadMustReg(t *testing.T, fd *sys.FD, r abi.RegReq2) uint32 {
	t.Helper()
	id, err := umadReg2(fd, r)
	if err != nil {
		t.Fatalf("register %+v: %v", r, err)
	}
	return id
}

func umadUnreg(fd *sys.FD, id uint32) error {
	p := new(uint32)
	*p = id
	return fd.Ioctl(abi.IB_USER_MAD_UNREGISTER_AGENT, unsafe.Pointer(p), p)
}

const umadVendorClass = 0x30
const umadVendorOUI = 0x001405

// umadVendorReg is a replier registration for vendor class 0x30 methods Get
// and Set.
var umadVendorReg = abi.RegReq2{QPN: 1, MgmtClass: umadVendorClass, MgmtClassVersion: 1, OUI: umadVendorOUI,
	MethodMask: abi.MethodMaskOf(0x01, 0x02)}

// umadMAD returns a 256-byte MAD.
func umadMAD(class, version, method uint8, tid uint64) []byte {
	m := make([]byte, 256)
	m[0], m[1], m[2], m[3] = 1, class, version, method
	binary.BigEndian.PutUint64(m[8:16], tid)
	if class >= 0x30 && class <= 0x4f {
		m[37], m[38], m[39] = byte(umadVendorOUI>>16&0xff), byte(umadVendorOUI>>8&0xff), byte(umadVendorOUI&0xff)
	}
	return m
}

// umadSend writes header h (hs bytes) plus m.
func umadWrite(fd *sys.FD, hs int, h abi.MadHdr, m []byte) error {
	b := make([]byte, hs, hs+len(m))
	if err := h.Encode(b, hs); err != nil {
		return err
	}
	n, err := fd.Write(append(b, m...))
	if err == nil && n != len(b)+len(m) {
		return errors.New("short write")
	}
	return err
}

// umadTo returns a header addressing port p's QP1 from agent id.
func umadTo(p *Port, id uint32) abi.MadHdr {
	h := abi.MadHdr{AgentID: id, QPN: 1, QKey: 0x80010000}
	if p.Config().LinkLayer == Ethernet {
		h.GRHPresent, h.GID, h.HopLimit = true, p.Config().GID, 64
	} else {
		h.LID = p.Config().LID
	}
	return h
}

// umadRecv reads one record within a second.
func umadRecv(t *testing.T, fd *sys.FD, hs int) (abi.MadHdr, []byte) {
	t.Helper()
	fd.SetReadDeadline(time.Now().Add(time.Second))
	defer fd.SetReadDeadline(time.Time{})
	b := make([]byte, hs+256)
	n, err := fd.Read(b)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var h abi.MadHdr
	if err := h.Decode(b, hs); err != nil {
		t.Fatal(err)
	}
	if int(h.Length) != n && h.Status == 0 {
		t.Errorf("hdr.length %d, read returned %d", h.Length, n)
	}
	return h, b[hs:n]
}

func umadNoRecord(t *testing.T, fd *sys.FD) {
	t.Helper()
	b := make([]byte, 64+256)
	if n, err := fd.ReadNonblocking(b); !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("read = %d, %v; want EAGAIN", n, err)
	}
}

func umadWant(t *testing.T, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

// ioctl rules.

func TestUmadRuleUnknownIoctl(t *testing.T) {
	_, fd := umadOpen(t, newUmadNet(t).ib1)
	umadWant(t, fd.Ioctl(abi.RDMA_VERBS_IOCTL, nil), syscall.ENOTTY)
	umadWant(t, fd.Ioctl(abi.IB_USER_MAD_ENABLE_PKEY+2, nil), syscall.ENOTTY)
}

func TestUmadRuleEnablePKeyBeforeAgents(t *testing.T) {
	f, fd := umadOpen(t, newUmadNet(t).ib1)
	if hs := f.HeaderSize(); hs != abi.MadHdrSizeOld {
		t.Fatalf("fresh file uses a %d-byte header, want 56", hs)
	}
	if err := fd.Ioctl(abi.IB_USER_MAD_ENABLE_PKEY, nil); err != nil {
		t.Fatal(err)
	}
	if hs := f.HeaderSize(); hs != abi.MadHdrSize {
		t.Fatalf("header %d after ENABLE_PKEY, want 64", hs)
	}
	// With the legacy registration, ENABLE_PKEY comes too late after
	// the first agent, even once it is gone.
	f2, fd2 := umadOpen(t, newUmadNet(t).ib1)
	id, err := umadReg1(fd2, abi.RegReq{QPN: 1, MgmtClass: 0x04, MgmtClassVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	umadUnreg(fd2, id)
	umadWant(t, fd2.Ioctl(abi.IB_USER_MAD_ENABLE_PKEY, nil), syscall.EINVAL)
	if hs := f2.HeaderSize(); hs != abi.MadHdrSizeOld {
		t.Fatalf("header %d, want 56", hs)
	}
}

func TestUmadRuleRegisterAgent2SwitchesHeader(t *testing.T) {
	f, fd := umadOpen(t, newUmadNet(t).ib1)
	umadMustReg(t, fd, abi.RegReq2{QPN: 1})
	if hs := f.HeaderSize(); hs != abi.MadHdrSize {
		t.Fatalf("header %d after REGISTER_AGENT2, want 64", hs)
	}
}

func TestUmadRuleRegisterAgent2Missing(t *testing.T) {
	fab := NewFabric()
	p := fab.AddPort(PortConfig{CA: "old", Port: 1, LID: 1, NoRegisterAgent2: true})
	_, fd := umadOpen(t, p)
	_, err := umadReg2(fd, abi.RegReq2{QPN: 1})
	umadWant(t, err, syscall.ENOTTY)
	if _, err := umadReg1(fd, abi.RegReq{QPN: 1}); err != nil {
		t.Fatal(err)
	}
}

func TestUmadRuleRegisterDeviceGone(t *testing.T) {
	n := newUmadNet(t)
	_, fd := umadOpen(t, n.ib1)
	n.ib1.Remove()
	_, err := umadReg2(fd, abi.RegReq2{QPN: 1})
	umadWant(t, err, syscall.EPIPE)
	_, err = umadReg1(fd, abi.RegReq{QPN: 1})
	umadWant(t, err, syscall.EPIPE)
}

func TestUmadRuleRegisterQPN(t *testing.T) {
	_, fd := umadOpen(t, newUmadNet(t).ib1)
	for _, qpn := range []uint32{2, 3, 0xffffff} {
		_, err := umadReg2(fd, abi.RegReq2{QPN: qpn})
		umadWant(t, err, syscall.EINVAL)
	}
	_, err := umadReg1(fd, abi.RegReq{QPN: 2})
	umadWant(t, err, syscall.EINVAL)
}

func TestUmadRuleRegisterFlags(t *testing.T) {
	_, fd := umadOpen(t, newUmadNet(t).ib1)
	b := make([]byte, abi.RegReq2Size)
	r := abi.RegReq2{QPN: 1, MgmtClass: 0x03, MgmtClassVersion: 2, Flags: 0x6}
	r.Encode(b)
	err := fd.Ioctl(abi.IB_USER_MAD_REGISTER_AGENT2, unsafe.Pointer(&b[0]), b)
	umadWant(t, err, syscall.EINVAL)
	if got := binary.LittleEndian.Uint32(b[12:16]); got != abi.IB_USER_MAD_REG_FLAGS_CAP {
		t.Fatalf("flags written back = %#x, want %#x", got, abi.IB_USER_MAD_REG_FLAGS_CAP)
	}
	umadMustReg(t, fd, abi.RegReq2{QPN: 1, MgmtClass: 0x03, MgmtClassVersion: 2, Flags: abi.IB_USER_MAD_USER_RMPP, RMPPVersion: 1})
}

func TestUmadRuleRegisterMaxAgents(t *testing.T) {
	_, fd := umadOpen(t, newUmadNet(t).ib1)
	for i := 0; i < 32; i++ {
		if id := umadMustReg(t, fd, abi.RegReq2{QPN: 1}); id != uint32(i) {
			t.Fatalf("agent %d got id %d", i, id)
		}
	}
	_, err := umadReg2(fd, abi.RegReq2{QPN: 1})
	umadWant(t, err, syscall.ENOMEM)
	// A freed slot is reused, lowest first.
	if err := umadUnreg(fd, 7); err != nil {
		t.Fatal(err)
	}
	if id := umadMustReg(t, fd, abi.RegReq2{QPN: 1}); id != 7 {
		t.Fatalf("reused id %d, want 7", id)
	}
}

func TestUmadRuleRegisterOUIWidth(t *testing.T) {
	_, fd := umadOpen(t, newUmadNet(t).ib1)
	b := make([]byte, abi.RegReq2Size)
	(&abi.RegReq2{QPN: 1, MgmtClass: umadVendorClass, MgmtClassVersion: 1, OUI: umadVendorOUI}).Encode(b)
	binary.LittleEndian.PutUint32(b[32:36], 0x01001405) // the encoder refuses this
	umadWant(t, fd.Ioctl(abi.IB_USER_MAD_REGISTER_AGENT2, unsafe.Pointer(&b[0]), b), syscall.EINVAL)
	// Without a class the OUI is not looked at.
	(&abi.RegReq2{QPN: 1}).Encode(b)
	binary.LittleEndian.PutUint32(b[32:36], 0xff000000)
	if err := fd.Ioctl(abi.IB_USER_MAD_REGISTER_AGENT2, unsafe.Pointer(&b[0]), b); err != nil {
		t.Fatal(err)
	}
}

func TestUmadRuleRegisterRMPPVersion(t *testing.T) {
	_, fd := umadOpen(t, newUmadNet(t).ib1)
	_, err := umadReg2(fd, abi.RegReq2{QPN: 1, MgmtClass: 0x03, MgmtClassVersion: 2, RMPPVersion: 2})
	umadWant(t, err, syscall.EINVAL)
	_, err = umadReg2(fd, abi.RegReq2{QPN: 1, RMPPVersion: 2})
	umadWant(t, err, syscall.EINVAL)
	umadMustReg(t, fd, abi.RegReq2{QPN: 1, MgmtClass: 0x03, MgmtClassVersion: 2, RMPPVersion: 1})
}

func TestUmadRuleRegisterClassVersion(t *testing.T) {
	_, fd := umadOpen(t, newUmadNet(t).ib1)
	_, err := umadReg2(fd, abi.RegReq2{QPN: 1, MgmtClass: 0x04, MgmtClassVersion: 0x83})
	umadWant(t, err, syscall.EINVAL)
	umadMustReg(t, fd, abi.RegReq2{QPN: 1, MgmtClass: 0x04, MgmtClassVersion: 0x82})
}

func TestUmadRuleRegisterClassRange(t *testing.T) {
	_, fd := umadOpen(t, newUmadNet(t).ib1)
	for _, class := range []uint8{0x50, 0x80, 0x82, 0xff} {
		_, err := umadReg2(fd, abi.RegReq2{QPN: 1, MgmtClass: class, MgmtClassVersion: 1})
		umadWant(t, err, syscall.EINVAL)
	}
	umadMustReg(t, fd, abi.RegReq2{QPN: 0, MgmtClass: 0x81, MgmtClassVersion: 1})
	umadMustReg(t, fd, abi.RegReq2{QPN: 1, MgmtClass: 0x4f, MgmtClassVersion: 1, OUI: 1})
}

func TestUmadRuleRegisterVendorNeedsOUI(t *testing.T) {
	_, fd := umadOpen(t, newUmadNet(t).ib1)
	for _, class := range []uint8{0x30, 0x4f} {
		_, err := umadReg2(fd, abi.RegReq2{QPN: 1, MgmtClass: class, MgmtClassVersion: 1})
		umadWant(t, err, syscall.EINVAL)
		_, err = umadReg1(fd, abi.RegReq{QPN: 1, MgmtClass: class, MgmtClassVersion: 1})
		umadWant(t, err, syscall.EINVAL)
	}
	// Vendor range 1 needs none.
	umadMustReg(t, fd, abi.RegReq2{QPN: 1, MgmtClass: 0x09, MgmtClassVersion: 1})
}

func TestUmadRuleRegisterRMPPClass(t *testing.T) {
	_, fd := umadOpen(t, newUmadNet(t).ib1)
	for _, class := range []uint8{0x04, 0x07, 0x09} {
		_, err := umadReg2(fd, abi.RegReq2{QPN: 1, MgmtClass: class, MgmtClassVersion: 1, RMPPVersion: 1})
		umadWant(t, err, syscall.EINVAL)
	}
	for _, class := range []uint8{0x03, 0x06, 0x10, 0x12, 0x30} {
		umadMustReg(t, fd, abi.RegReq2{QPN: 1, MgmtClass: class, MgmtClassVersion: 1, RMPPVersion: 1, OUI: 1})
	}
}

func TestUmadRuleRegisterClassQP(t *testing.T) {
	_, fd := umadOpen(t, newUmadNet(t).ib1)
	for _, class := range []uint8{0x01, 0x81} {
		_, err := umadReg2(fd, abi.RegReq2{QPN: 1, MgmtClass: class, MgmtClassVersion: 1})
		umadWant(t, err, syscall.EINVAL)
	}
	_, err := umadReg2(fd, abi.RegReq2{QPN: 0, MgmtClass: 0x04, MgmtClassVersion: 1})
	umadWant(t, err, syscall.EINVAL)
	umadMustReg(t, fd, abi.RegReq2{QPN: 0, MgmtClass: 0x01, MgmtClassVersion: 1})
	umadMustReg(t, fd, abi.RegReq2{QPN: 0}) // a send-only SMI agent
}

func TestUmadRuleRegisterSendOnlyUserRMPP(t *testing.T) {
	_, fd := umadOpen(t, newUmadNet(t).ib1)
	_, err := umadReg2(fd, abi.RegReq2{QPN: 1, Flags: abi.IB_USER_MAD_USER_RMPP})
	umadWant(t, err, syscall.EINVAL)
}

func TestUmadRuleRegisterMissingQP(t *testing.T) {
	n := newUmadNet(t)
	_, fd := umadOpen(t, n.roce1)
	for _, r := range []abi.RegReq2{{QPN: 0}, {QPN: 0, MgmtClass: 0x01, MgmtClassVersion: 1}, {QPN: 0, MgmtClass: 0x81, MgmtClassVersion: 1}} {
		_, err := umadReg2(fd, r)
		umadWant(t, err, syscall.EPROTONOSUPPORT)
	}
	// The class checks come first: a GSI class on QP0 is EINVAL even here.
	_, err := umadReg2(fd, abi.RegReq2{QPN: 0, MgmtClass: 0x04, MgmtClassVersion: 1})
	umadWant(t, err, syscall.EINVAL)
	umadMustReg(t, fd, umadVendorReg)

	p := n.fab.AddPort(PortConfig{CA: "nogsi", Port: 1, LID: 9, NoGSI: true})
	_, fd2 := umadOpen(t, p)
	_, err = umadReg2(fd2, abi.RegReq2{QPN: 1})
	umadWant(t, err, syscall.EPROTONOSUPPORT)
}

func TestUmadRuleRegisterMethodInUse(t *testing.T) {
	n := newUmadNet(t)
	_, fd1 := umadOpen(t, n.ib1)
	_, fd2 := umadOpen(t, n.ib1)
	perf := abi.RegReq2{QPN: 1, MgmtClass: 0x04, MgmtClassVersion: 1, MethodMask: abi.MethodMaskOf(0x01)}
	id := umadMustReg(t, fd1, perf)
	for _, fd := range []*sys.FD{fd1, fd2} {
		_, err := umadReg2(fd, perf)
		umadWant(t, err, syscall.EINVAL)
		_, err = umadReg2(fd, abi.RegReq2{QPN: 1, MgmtClass: 0x04, MgmtClassVersion: 1, MethodMask: abi.MethodMaskOf(0x02, 0x01)})
		umadWant(t, err, syscall.EINVAL)
	}
	// Other methods, other versions, empty masks, other OUIs, other ports: free.
	umadMustReg(t, fd2, abi.RegReq2{QPN: 1, MgmtClass: 0x04, MgmtClassVersion: 1, MethodMask: abi.MethodMaskOf(0x02)})
	umadMustReg(t, fd2, abi.RegReq2{QPN: 1, MgmtClass: 0x04, MgmtClassVersion: 2, MethodMask: abi.MethodMaskOf(0x01)})
	umadMustReg(t, fd2, abi.RegReq2{QPN: 1, MgmtClass: 0x04, MgmtClassVersion: 1})
	umadMustReg(t, fd1, umadVendorReg)
	v2 := umadVendorReg
	v2.OUI = 0x0002c9
	umadMustReg(t, fd2, v2)
	_, err := umadReg2(fd2, umadVendorReg)
	umadWant(t, err, syscall.EINVAL)
	_, fd3 := umadOpen(t, n.ib2)
	umadMustReg(t, fd3, perf)
	// Unregistering frees the methods.
	if err := umadUnreg(fd1, id); err != nil {
		t.Fatal(err)
	}
	umadMustReg(t, fd2, perf)
}

func TestUmadRuleUnregister(t *testing.T) {
	_, fd := umadOpen(t, newUmadNet(t).ib1)
	umadWant(t, umadUnreg(fd, 32), syscall.EINVAL)
	umadWant(t, umadUnreg(fd, 0), syscall.EINVAL)
	id := umadMustReg(t, fd, abi.RegReq2{QPN: 1})
	if err := umadUnreg(fd, id); err != nil {
		t.Fatal(err)
	}
	umadWant(t, umadUnreg(fd, id), syscall.EINVAL)
}

// write rules.

func TestUmadRuleWriteShort(t *testing.T) {
	n := newUmadNet(t)
	_, fd := umadOpenPKey(t, n.ib1)
	id := umadMustReg(t, fd, abi.RegReq2{QPN: 1})
	err := umadWrite(fd, 64, umadTo(n.ib2, id), umadMAD(0x04, 1, 1, 1)[:35])
	umadWant(t, err, syscall.EINVAL)
	if err := umadWrite(fd, 64, umadTo(n.ib2, id), umadMAD(0x04, 1, 1, 1)[:36]); err != nil {
		t.Fatal(err)
	}
	// The old header's minimum is 56 + 36.
	_, fd2 := umadOpen(t, n.ib1)
	id2, _ := umadReg1(fd2, abi.RegReq{QPN: 1})
	umadWant(t, umadWrite(fd2, 56, umadTo(n.ib2, id2), umadMAD(0x04, 1, 1, 2)[:35]), syscall.EINVAL)
	if err := umadWrite(fd2, 56, umadTo(n.ib2, id2), umadMAD(0x04, 1, 1, 2)[:36]); err != nil {
		t.Fatal(err)
	}
}

func TestUmadRuleWriteAgentID(t *testing.T) {
	n := newUmadNet(t)
	_, fd := umadOpenPKey(t, n.ib1)
	umadMustReg(t, fd, abi.RegReq2{QPN: 1})
	umadWant(t, umadWrite(fd, 64, umadTo(n.ib2, 32), umadMAD(0x04, 1, 1, 1)), syscall.EINVAL)
	umadWant(t, umadWrite(fd, 64, umadTo(n.ib2, 1), umadMAD(0x04, 1, 1, 1)), syscall.EIO)
}

func TestUmadRuleWriteRoCENeedsGRH(t *testing.T) {
	n := newUmadNet(t)
	_, fd := umadOpenPKey(t, n.roce1)
	id := umadMustReg(t, fd, abi.RegReq2{QPN: 1})
	h := umadTo(n.roce2, id)
	h.GRHPresent = false
	umadWant(t, umadWrite(fd, 64, h, umadMAD(0x04, 1, 1, 1)), syscall.EINVAL)
	if err := umadWrite(fd, 64, umadTo(n.roce2, id), umadMAD(0x04, 1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	// A GID nobody has: the neighbour does not resolve.
	h = umadTo(n.roce2, id)
	h.GID[15] = 0xee
	umadWant(t, umadWrite(fd, 64, h, umadMAD(0x04, 1, 1, 1)), syscall.ETIMEDOUT)
	// A removed device's GID still resolves (its netdev is there); the
	// MAD is lost.
	n.roce2.Remove()
	if err := umadWrite(fd, 64, umadTo(n.roce2, id), umadMAD(0x04, 1, 3, 1)); err != nil {
		t.Fatal(err)
	}
}

func TestUmadRuleWriteSize(t *testing.T) {
	n := newUmadNet(t)
	_, fd := umadOpenPKey(t, n.ib1)
	id := umadMustReg(t, fd, abi.RegReq2{QPN: 1})
	long := append(umadMAD(0x04, 1, 1, 1), 0)
	umadWant(t, umadWrite(fd, 64, umadTo(n.ib2, id), long), syscall.EINVAL)
	// The class's data offset: an SA MAD needs its 56-byte header.
	umadWant(t, umadWrite(fd, 64, umadTo(n.ib2, id), umadMAD(0x03, 2, 1, 1)[:55]), syscall.EINVAL)
	if err := umadWrite(fd, 64, umadTo(n.ib2, id), umadMAD(0x03, 2, 1, 1)[:56]); err != nil {
		t.Fatal(err)
	}
}

func TestUmadRuleWriteTIDRewritten(t *testing.T) {
	n := newUmadNet(t)
	_, cfd := umadOpenPKey(t, n.ib1)
	c1 := umadMustReg(t, cfd, abi.RegReq2{QPN: 1})
	c2 := umadMustReg(t, cfd, abi.RegReq2{QPN: 1})
	_, sfd := umadOpenPKey(t, n.ib2)
	srv := umadMustReg(t, sfd, umadVendorReg)

	var his []uint32
	for _, c := range []uint32{c1, c2} {
		if err := umadWrite(cfd, 64, umadTo(n.ib2, c), umadMAD(umadVendorClass, 1, 0x01, 0xdeadbeef_00000042)); err != nil {
			t.Fatal(err)
		}
		h, m := umadRecv(t, sfd, 64)
		if h.AgentID != srv {
			t.Fatalf("delivered umadTo agent %d, want %d", h.AgentID, srv)
		}
		tid := binary.BigEndian.Uint64(m[8:16])
		if tid&0xffffffff != 0x42 || tid>>32 == 0xdeadbeef || tid>>32 == 0 {
			t.Fatalf("request TID %#x: low half must stay, high half must be the agent's", tid)
		}
		his = append(his, uint32(tid>>32))
	}
	if his[0] == his[1] {
		t.Fatalf("two agents share hi_tid %#x", his[0])
	}
	// A response keeps its TID as written.
	resp := umadMAD(umadVendorClass, 1, 0x81, 0xdeadbeef_00000042)
	if err := umadWrite(sfd, 64, umadTo(n.ib1, srv), resp); err != nil {
		t.Fatal(err)
	}
	umadNoRecord(t, cfd) // and is dropped: nobody waits for TID deadbeef…
}

func TestUmadRuleWriteDuplicateTID(t *testing.T) {
	n := newUmadNet(t)
	f, fd := umadOpenPKey(t, n.ib1)
	a := umadMustReg(t, fd, abi.RegReq2{QPN: 1})
	b := umadMustReg(t, fd, abi.RegReq2{QPN: 1})
	h := umadTo(n.ib2, a)
	h.TimeoutMs = 10_000 // method 3 (Send) to a port that has no agent for it: no answer
	if err := umadWrite(fd, 64, h, umadMAD(0x04, 1, 3, 7)); err != nil {
		t.Fatal(err)
	}
	// Same TID and class while the first is outstanding: EINVAL.
	umadWant(t, umadWrite(fd, 64, h, umadMAD(0x04, 1, 3, 7)), syscall.EINVAL)
	// Another class, or the same low TID from another agent (the high
	// half differs), is fine.
	if err := umadWrite(fd, 64, h, umadMAD(0x05, 1, 3, 7)); err != nil {
		t.Fatal(err)
	}
	hb := umadTo(n.ib2, b)
	hb.TimeoutMs = 10_000
	if err := umadWrite(fd, 64, hb, umadMAD(0x04, 1, 3, 7)); err != nil {
		t.Fatal(err)
	}
	if got := f.Outstanding(); got != 3 {
		t.Fatalf("%d outstanding, want 3", got)
	}
	// Without a timeout nothing stays outstanding, so nothing collides.
	h.TimeoutMs = 0
	for i := 0; i < 2; i++ {
		if err := umadWrite(fd, 64, h, umadMAD(0x06, 1, 1, 9)); err != nil {
			t.Fatal(err)
		}
	}
	// Unregistering cancels the agent's requests without a report.
	umadUnreg(fd, a)
	umadUnreg(fd, b)
	if got := f.Outstanding(); got != 0 {
		t.Fatalf("%d outstanding after unregister, want 0", got)
	}
	umadNoRecord(t, fd)
}

func TestUmadRuleWriteDuplicateResponse(t *testing.T) {
	n := newUmadNet(t)
	_, fd := umadOpenPKey(t, n.ib1)
	a := umadMustReg(t, fd, abi.RegReq2{QPN: 1})
	h := umadTo(n.ib2, a)
	h.TimeoutMs = 10_000 // a response waiting for a response: never completes
	if err := umadWrite(fd, 64, h, umadMAD(0x04, 1, 0x81, 7)); err != nil {
		t.Fatal(err)
	}
	umadWant(t, umadWrite(fd, 64, h, umadMAD(0x04, 1, 0x81, 7)), syscall.EINVAL)
	// Another destination is no duplicate.
	if err := umadWrite(fd, 64, umadTo(n.ib1, a), umadMAD(0x04, 1, 0x81, 7)); err != nil {
		t.Fatal(err)
	}
}

func TestUmadRuleTimeoutAfterRetries(t *testing.T) {
	n := newUmadNet(t)
	for _, hs := range []int{64, 56} {
		var cfd *sys.FD
		var c uint32
		if hs == 64 {
			_, cfd = umadOpenPKey(t, n.roce1)
			c = umadMustReg(t, cfd, abi.RegReq2{QPN: 1})
		} else {
			_, cfd = umadOpen(t, n.roce1)
			c, _ = umadReg1(cfd, abi.RegReq{QPN: 1})
		}
		// A replier that never answers counts the copies it gets.
		_, sfd := umadOpenPKey(t, n.roce2)
		srv := umadMustReg(t, sfd, umadVendorReg)

		h := umadTo(n.roce2, c)
		h.TimeoutMs, h.Retries = 20, 3
		before := n.roce1.Sent()
		start := time.Now()
		if err := umadWrite(cfd, hs, h, umadMAD(umadVendorClass, 1, 0x01, 0x1234)); err != nil {
			t.Fatal(err)
		}
		th, tm := umadRecv(t, cfd, hs)
		if el := time.Since(start); el < 80*time.Millisecond {
			t.Errorf("timeout came after %v, want ≥ 4 × 20 ms", el)
		}
		if th.Status != uint32(syscall.ETIMEDOUT) || th.AgentID != c || th.TimeoutMs != 20 || th.Retries != 3 {
			t.Fatalf("timeout record header %+v", th)
		}
		if len(tm) != 24 || binary.BigEndian.Uint64(tm[8:16])&0xffffffff != 0x1234 || tm[1] != umadVendorClass {
			t.Fatalf("timeout record MAD % x", tm)
		}
		if got := n.roce1.Sent() - before; got != 4 {
			t.Fatalf("sent %d times, want 1 + 3 retries", got)
		}
		for i := 0; i < 4; i++ {
			h, _ := umadRecv(t, sfd, 64)
			if h.AgentID != srv {
				t.Fatal(h)
			}
		}
		umadNoRecord(t, sfd)
		umadUnreg(sfd, srv)
	}
}

func TestUmadRuleTimeoutForever(t *testing.T) {
	n := newUmadNet(t)
	f, fd := umadOpenPKey(t, n.ib1)
	a := umadMustReg(t, fd, abi.RegReq2{QPN: 1})
	h := umadTo(n.ib2, a) // nobody registered there for class 0x04 Set…
	h.TimeoutMs = 0xffffffff
	if err := umadWrite(fd, 64, h, umadMAD(0x04, 1, 0x03, 1)); err != nil { // …and method 3 gets no generated answer
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	umadNoRecord(t, fd)
	if f.Outstanding() != 1 {
		t.Fatal("a request with timeout_ms ≥ 2³¹ must wait for ever")
	}
}

func TestUmadRuleResponseCompletesRequest(t *testing.T) {
	n := newUmadNet(t)
	cf, cfd := umadOpenPKey(t, n.roce1)
	c := umadMustReg(t, cfd, abi.RegReq2{QPN: 1, MgmtClass: umadVendorClass, MgmtClassVersion: 1, OUI: umadVendorOUI}) // a client: no methods
	_, sfd := umadOpenPKey(t, n.roce2)
	srv := umadMustReg(t, sfd, umadVendorReg)

	h := umadTo(n.roce2, c)
	h.TimeoutMs, h.Retries = 50, 1
	if err := umadWrite(cfd, 64, h, umadMAD(umadVendorClass, 1, 0x01, 77)); err != nil {
		t.Fatal(err)
	}
	rh, req := umadRecv(t, sfd, 64)
	if rh.AgentID != srv || rh.QPN != 1 || !rh.GRHPresent || rh.GID != umadGIDR || rh.Length != 64+256 {
		t.Fatalf("request header %+v", rh)
	}
	// Answer umadTo where the request came from, with its TID.
	resp := append([]byte(nil), req...)
	resp[3] = 0x81
	back := abi.MadHdr{AgentID: srv, QPN: rh.QPN, QKey: 0x80010000, GRHPresent: true, GID: rh.GID, HopLimit: 64}
	if err := umadWrite(sfd, 64, back, resp); err != nil {
		t.Fatal(err)
	}
	ch, cm := umadRecv(t, cfd, 64)
	if ch.AgentID != c || ch.Status != 0 || binary.BigEndian.Uint64(cm[8:16]) != binary.BigEndian.Uint64(req[8:16]) {
		t.Fatalf("response %+v % x", ch, cm[:24])
	}
	if cf.Outstanding() != 0 {
		t.Fatal("the response must complete the request")
	}
	time.Sleep(120 * time.Millisecond)
	umadNoRecord(t, cfd) // no timeout record afterwards
	umadNoRecord(t, sfd) // and no retry
	// A second response umadTo the same TID is unsolicited now: dropped.
	if err := umadWrite(sfd, 64, back, resp); err != nil {
		t.Fatal(err)
	}
	umadNoRecord(t, cfd)
}

func TestUmadRuleUnmatchedGetAnswered(t *testing.T) {
	n := newUmadNet(t)
	_, fd := umadOpenPKey(t, n.roce1)
	a := umadMustReg(t, fd, abi.RegReq2{QPN: 1, MgmtClass: 0x04, MgmtClassVersion: 1}) // PerfMgmt client
	h := umadTo(n.roce2, a)
	h.TimeoutMs = 1000
	if err := umadWrite(fd, 64, h, umadMAD(0x04, 1, 0x01, 5)); err != nil { // PortCounters Get
		t.Fatal(err)
	}
	rh, m := umadRecv(t, fd, 64)
	if rh.Status != 0 || m[3] != 0x81 || binary.BigEndian.Uint16(m[4:6]) != 0x000c {
		t.Fatalf("got %+v method %#x status %#x, want GetResp with status 0x000c", rh, m[3], binary.BigEndian.Uint16(m[4:6]))
	}
	// Other methods get no answer.
	h.TimeoutMs = 0
	if err := umadWrite(fd, 64, h, umadMAD(0x04, 1, 0x06, 6)); err != nil { // Send
		t.Fatal(err)
	}
	umadNoRecord(t, fd)
}

func TestUmadRuleRoutingByClassVersionMethodOUI(t *testing.T) {
	n := newUmadNet(t)
	_, cfd := umadOpenPKey(t, n.ib1)
	c := umadMustReg(t, cfd, abi.RegReq2{QPN: 1})
	_, s1 := umadOpenPKey(t, n.ib2)
	_, s2 := umadOpenPKey(t, n.ib2)
	get := umadMustReg(t, s1, abi.RegReq2{QPN: 1, MgmtClass: 0x09, MgmtClassVersion: 1, MethodMask: abi.MethodMaskOf(0x01)})
	set := umadMustReg(t, s2, abi.RegReq2{QPN: 1, MgmtClass: 0x09, MgmtClassVersion: 1, MethodMask: abi.MethodMaskOf(0x02)})
	v2 := umadMustReg(t, s2, abi.RegReq2{QPN: 1, MgmtClass: 0x09, MgmtClassVersion: 2, MethodMask: abi.MethodMaskOf(0x01)})
	oui := umadMustReg(t, s1, umadVendorReg)
	for _, tc := range []struct {
		m    []byte
		fd   *sys.FD
		want uint32
	}{
		{umadMAD(0x09, 1, 0x01, 1), s1, get},
		{umadMAD(0x09, 1, 0x02, 2), s2, set},
		{umadMAD(0x09, 2, 0x01, 3), s2, v2},
		{umadMAD(umadVendorClass, 1, 0x01, 4), s1, oui},
	} {
		if err := umadWrite(cfd, 64, umadTo(n.ib2, c), tc.m); err != nil {
			t.Fatal(err)
		}
		if h, _ := umadRecv(t, tc.fd, 64); h.AgentID != tc.want {
			t.Fatalf("agent %d, want %d", h.AgentID, tc.want)
		}
	}
	// Another OUI in the same vendor class finds no agent.
	m := umadMAD(umadVendorClass, 1, 0x03, 5)
	m[39] = 0x77
	umadWrite(cfd, 64, umadTo(n.ib2, c), m)
	umadNoRecord(t, s1)
	umadNoRecord(t, s2)
}

func TestUmadRuleWireDrops(t *testing.T) {
	n := newUmadNet(t)
	_, cfd := umadOpenPKey(t, n.ib1)
	c := umadMustReg(t, cfd, abi.RegReq2{QPN: 1})
	smi := umadMustReg(t, cfd, abi.RegReq2{QPN: 0})
	_, sfd := umadOpenPKey(t, n.ib2)
	umadMustReg(t, sfd, abi.RegReq2{QPN: 1, MgmtClass: 0x09, MgmtClassVersion: 1, MethodMask: abi.MethodMaskOf(0x03)})
	umadMustReg(t, sfd, abi.RegReq2{QPN: 0, MgmtClass: 0x01, MgmtClassVersion: 1, MethodMask: abi.MethodMaskOf(0x03)})
	bad := umadMAD(0x09, 1, 0x03, 1)
	bad[0] = 2 // base version
	umadWrite(cfd, 64, umadTo(n.ib2, c), bad)
	smp := umadMAD(0x01, 1, 0x03, 2)
	umadWrite(cfd, 64, umadTo(n.ib2, c), smp) // an SMP umadTo QP1
	gsiToQP0 := umadTo(n.ib2, smi)
	gsiToQP0.QPN = 0
	umadWrite(cfd, 64, gsiToQP0, umadMAD(0x09, 1, 0x03, 3)) // a GSI MAD umadTo QP0
	nowhere := umadTo(n.ib2, c)
	nowhere.LID = 99
	umadWrite(cfd, 64, nowhere, umadMAD(0x09, 1, 0x03, 4))
	umadNoRecord(t, sfd)
	// And the well-formed SMP umadTo QP0 arrives.
	umadWrite(cfd, 64, gsiToQP0, smp)
	if h, _ := umadRecv(t, sfd, 64); h.QPN != 0 {
		t.Fatalf("SMP came from QP %d", h.QPN)
	}
}

// read rules.

func TestUmadRuleReadShorterThanHeader(t *testing.T) {
	_, fd := umadOpenPKey(t, newUmadNet(t).ib1)
	_, err := fd.ReadNonblocking(make([]byte, 63))
	umadWant(t, err, syscall.EINVAL)
}

func TestUmadRuleReadNothingQueued(t *testing.T) {
	_, fd := umadOpenPKey(t, newUmadNet(t).ib1)
	umadNoRecord(t, fd)
	fd.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, err := fd.Read(make([]byte, 320)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blocking read: %v, want the deadline", err)
	}
}

func TestUmadRuleReadBufferTooSmall(t *testing.T) {
	n := newUmadNet(t)
	f, fd := umadOpenPKey(t, n.ib1)
	a := umadMustReg(t, fd, abi.RegReq2{QPN: 1, MgmtClass: 0x09, MgmtClassVersion: 1, MethodMask: abi.MethodMaskOf(0x03)})
	umadWrite(fd, 64, umadTo(n.ib1, a), umadMAD(0x09, 1, 0x03, 1)) // umadTo itself
	b := make([]byte, 64+255)
	_, err := fd.ReadNonblocking(b)
	umadWant(t, err, syscall.EINVAL)
	if b[0] != 0 || f.Queued() != 1 {
		t.Fatal("nothing may be copied and the record must stay queued")
	}
	if got, err := fd.ReadNonblocking(make([]byte, 64+256)); err != nil || got != 320 {
		t.Fatalf("read = %d, %v", got, err)
	}
}

func TestUmadRuleReadRMPPTooLarge(t *testing.T) {
	n := newUmadNet(t)
	f, fd := umadOpenPKey(t, n.ib1)
	// Kernel-RMPP agents on an RMPP vendor class, client and server.
	c := umadMustReg(t, fd, abi.RegReq2{QPN: 1, MgmtClass: umadVendorClass, MgmtClassVersion: 1, OUI: umadVendorOUI, RMPPVersion: 1})
	umadMustReg(t, fd, abi.RegReq2{QPN: 1, MgmtClass: umadVendorClass, MgmtClassVersion: 1, OUI: umadVendorOUI, RMPPVersion: 1,
		MethodMask: abi.MethodMaskOf(0x03)})
	big := make([]byte, 1000)
	copy(big, umadMAD(umadVendorClass, 1, 0x03, 1))
	big[24], big[25], big[26] = 1, 1, umadRMPPFlagActive // RMPP version, DATA, active
	big[999] = 0x99
	if err := umadWrite(fd, 64, umadTo(n.ib1, c), big); err != nil {
		t.Fatal(err)
	}
	// Too small even for the first segment: EINVAL.
	_, err := fd.ReadNonblocking(make([]byte, 64+255))
	umadWant(t, err, syscall.EINVAL)
	// Room for one segment: ENOSPC with the header and segment copied.
	b := make([]byte, 64+256)
	_, err = fd.ReadNonblocking(b)
	umadWant(t, err, syscall.ENOSPC)
	var h abi.MadHdr
	h.Decode(b, 64)
	if h.Length != 64+1000 || b[64+1] != umadVendorClass || f.Queued() != 1 {
		t.Fatalf("after ENOSPC: length %d, class %#x, queued %d", h.Length, b[65], f.Queued())
	}
	b = make([]byte, h.Length)
	if got, err := fd.ReadNonblocking(b); err != nil || got != 1064 || b[1063] != 0x99 {
		t.Fatalf("read = %d, %v", got, err)
	}
	// Without kernel RMPP such a message cannot be sent.
	_, fd2 := umadOpenPKey(t, n.ib1)
	c2 := umadMustReg(t, fd2, abi.RegReq2{QPN: 1, MgmtClass: umadVendorClass, MgmtClassVersion: 1, OUI: umadVendorOUI})
	umadWant(t, umadWrite(fd2, 64, umadTo(n.ib1, c2), big), syscall.EINVAL)
}

func TestUmadRuleDeviceRemoved(t *testing.T) {
	n := newUmadNet(t)
	f, fd := umadOpenPKey(t, n.ib1)
	a := umadMustReg(t, fd, abi.RegReq2{QPN: 1, MgmtClass: 0x09, MgmtClassVersion: 1, MethodMask: abi.MethodMaskOf(0x03)})
	errc := make(chan error, 1)
	go func() {
		_, err := fd.Read(make([]byte, 320))
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	n.ib1.Remove()
	umadWant(t, <-errc, syscall.EIO)
	_, err := fd.ReadNonblocking(make([]byte, 320))
	umadWant(t, err, syscall.EIO)
	umadWant(t, umadWrite(fd, 64, umadTo(n.ib2, a), umadMAD(0x09, 1, 3, 1)), syscall.EIO)
	umadWant(t, f.WaitReadable(time.Time{}), syscall.EIO)
	umadWant(t, fd.WaitReadable(), syscall.EIO)
	if ok, err := fd.Readable(); ok {
		t.Fatal("a removed device is not readable")
	} else {
		umadWant(t, err, syscall.EIO)
	}
	if _, _, err := n.ib1.Open(); !errors.Is(err, syscall.ENXIO) {
		t.Fatalf("open after removal: %v, want ENXIO", err)
	}
}

func TestUmadBlockingReadWakeups(t *testing.T) {
	n := newUmadNet(t)
	f, fd := umadOpenPKey(t, n.ib1)
	a := umadMustReg(t, fd, abi.RegReq2{QPN: 1, MgmtClass: 0x09, MgmtClassVersion: 1, MethodMask: abi.MethodMaskOf(0x03)})
	// A record arriving wakes a blocked reader.
	go func() {
		time.Sleep(10 * time.Millisecond)
		umadWrite(fd, 64, umadTo(n.ib1, a), umadMAD(0x09, 1, 3, 1))
	}()
	if h, _ := umadRecv(t, fd, 64); h.AgentID != a {
		t.Fatal(h)
	}
	// WaitReadable consumes nothing.
	umadWrite(fd, 64, umadTo(n.ib1, a), umadMAD(0x09, 1, 3, 2))
	if err := f.WaitReadable(time.Now().Add(time.Second)); err != nil || f.Queued() != 1 {
		t.Fatal(err)
	}
	umadRecv(t, fd, 64)
	// A deadline moved into the past ends a wait in progress, as on a
	// real descriptor (sys.Waiter's DeadlineChanged).
	go func() {
		time.Sleep(10 * time.Millisecond)
		fd.SetReadDeadline(time.Unix(1, 0))
	}()
	if _, err := fd.Read(make([]byte, 320)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read woken by a past deadline: %v", err)
	}
	fd.SetReadDeadline(time.Time{})
	// Close unblocks a reader with os.ErrClosed.
	errc := make(chan error, 1)
	go func() {
		_, err := fd.Read(make([]byte, 320))
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	fd.Close()
	if err := <-errc; !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read across close: %v", err)
	}
}

// TestUmadWaiter: the file implements sys.Waiter, so FD.Readable,
// FD.WaitReadable and FD.SetReadDeadline behave on it as poll(2) and the
// runtime poller do on a real umad descriptor.
func TestUmadWaiter(t *testing.T) {
	var _ sys.Waiter = (*File)(nil)
	n := newUmadNet(t)
	_, fd := umadOpenPKey(t, n.ib1)
	a := umadMustReg(t, fd, abi.RegReq2{QPN: 1, MgmtClass: 0x09, MgmtClassVersion: 1, MethodMask: abi.MethodMaskOf(0x03)})
	buf := make([]byte, 320)

	// Readable looks without waiting and consumes nothing.
	if ok, err := fd.Readable(); ok || err != nil {
		t.Fatalf("empty queue: Readable = %v, %v", ok, err)
	}
	umadWrite(fd, 64, umadTo(n.ib1, a), umadMAD(0x09, 1, 3, 1))
	for range 2 {
		if ok, err := fd.Readable(); !ok || err != nil {
			t.Fatalf("one record queued: Readable = %v, %v", ok, err)
		}
	}
	umadRecv(t, fd, 64)

	// A deadline set before the wait, and one moved while it waits.
	fd.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	start := time.Now()
	if err := fd.WaitReadable(); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("WaitReadable: %v after %v", err, time.Since(start))
	}
	fd.SetReadDeadline(time.Now().Add(time.Hour))
	go func() {
		time.Sleep(10 * time.Millisecond)
		fd.SetReadDeadline(time.Now().Add(10 * time.Millisecond)) // sooner
	}()
	start = time.Now()
	if _, err := fd.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("Read with a deadline moved sooner: %v after %v", err, time.Since(start))
	}
	// A later deadline lets a wait that would have expired go on.
	// (A second, not milliseconds: the goroutine that clears it must run
	// before the deadline even on a loaded host.)
	fd.SetReadDeadline(time.Now().Add(time.Second))
	go func() {
		time.Sleep(5 * time.Millisecond)
		fd.SetReadDeadline(time.Time{})
		time.Sleep(1500 * time.Millisecond)
		umadWrite(fd, 64, umadTo(n.ib1, a), umadMAD(0x09, 1, 3, 2))
	}()
	if _, err := fd.Read(buf); err != nil {
		t.Fatalf("Read after the deadline was cleared: %v", err)
	}

	// An expired deadline fails a blocking read even with a record
	// queued, as the poller does; a non-blocking read and Readable do not
	// look at it.
	umadWrite(fd, 64, umadTo(n.ib1, a), umadMAD(0x09, 1, 3, 3))
	fd.SetReadDeadline(time.Unix(1, 0))
	if _, err := fd.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline: %v", err)
	}
	if err := fd.WaitReadable(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("WaitReadable past the deadline: %v", err)
	}
	if ok, err := fd.Readable(); !ok || err != nil {
		t.Fatalf("Readable past the deadline: %v, %v", ok, err)
	}
	if _, err := fd.ReadNonblocking(buf); err != nil {
		t.Fatalf("ReadNonblocking past the deadline: %v", err)
	}
	fd.SetReadDeadline(time.Time{})

	// One record wakes every waiter: three WaitReadables blocked
	// together all return.
	errc := make(chan error, 3)
	for range 3 {
		go func() { errc <- fd.WaitReadable() }()
	}
	time.Sleep(10 * time.Millisecond)
	umadWrite(fd, 64, umadTo(n.ib1, a), umadMAD(0x09, 1, 3, 4))
	for range 3 {
		select {
		case err := <-errc:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiter was not woken")
		}
	}
	umadRecv(t, fd, 64)

	// Closing wakes a WaitReadable with os.ErrClosed.
	go func() { errc <- fd.WaitReadable() }()
	time.Sleep(10 * time.Millisecond)
	fd.Close()
	if err := <-errc; !errors.Is(err, os.ErrClosed) {
		t.Fatalf("WaitReadable across close: %v", err)
	}
	if _, err := fd.Readable(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Readable after close: %v", err)
	}
}

func TestUmadOldHeader(t *testing.T) {
	n := newUmadNet(t)
	_, fd := umadOpen(t, n.ib1)
	a, err := umadReg1(fd, abi.RegReq{QPN: 1, MgmtClass: 0x09, MgmtClassVersion: 1, MethodMask: abi.MethodMaskOf(0x03)})
	if err != nil {
		t.Fatal(err)
	}
	if err := umadWrite(fd, 56, umadTo(n.ib1, a), umadMAD(0x09, 1, 3, 1)); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 56+256)
	got, err := fd.ReadNonblocking(b)
	if err != nil || got != 56+256 || binary.LittleEndian.Uint32(b[16:20]) != 56+256 || b[56+1] != 0x09 {
		t.Fatalf("read = %d, %v, % x", got, err, b[:60])
	}
}

// TestUmadSteadyStateAllocs: the model itself does not allocate for a
// request/response round trip once warm, so that benchmarks of the code
// above it measure that code.
func TestUmadSteadyStateAllocs(t *testing.T) {
	n := newUmadNet(t)
	_, cfd := umadOpenPKey(t, n.ib1)
	c := umadMustReg(t, cfd, abi.RegReq2{QPN: 1})
	_, sfd := umadOpenPKey(t, n.ib2)
	s := umadMustReg(t, sfd, umadVendorReg)
	req := make([]byte, 64+256)
	h := umadTo(n.ib2, c)
	h.TimeoutMs = 1000
	h.Encode(req, 64)
	copy(req[64:], umadMAD(umadVendorClass, 1, 1, 1))
	resp := make([]byte, 64+256)
	bh := umadTo(n.ib1, s)
	bh.Encode(resp, 64)
	buf := make([]byte, 64+256)
	tid := uint32(0)
	round := func() {
		tid++
		binary.BigEndian.PutUint32(req[64+12:], tid)
		if _, err := cfd.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := sfd.ReadNonblocking(buf); err != nil {
			t.Fatal(err)
		}
		copy(resp[64:], buf[64:])
		resp[64+3] = 0x81
		if _, err := sfd.Write(resp); err != nil {
			t.Fatal(err)
		}
		if _, err := cfd.ReadNonblocking(buf); err != nil {
			t.Fatal(err)
		}
	}
	round()
	if a := testing.AllocsPerRun(100, round); a != 0 {
		t.Fatalf("%v allocations per round trip", a)
	}
}

// The wire to a network outside the fabric (ibsim's, for umad's
// simulator transport).

// umadTestWire records what a fabric puts on its wire and answers
// Stalled with stalled.
type umadTestWire struct {
	mu      sync.Mutex
	sent    [][]byte
	stalled bool
	asked   int
}

func (w *umadTestWire) Transmit(_ *Port, _ uint32, _ *abi.MadHdr, mad []byte) {
	w.mu.Lock()
	w.sent = append(w.sent, append([]byte(nil), mad...))
	w.mu.Unlock()
}

func (w *umadTestWire) Stalled(_ *Port, _ time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.asked++
	return w.stalled
}

func (w *umadTestWire) count() (sent, asked int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.sent), w.asked
}

func (w *umadTestWire) last() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sent[len(w.sent)-1]
}

// TestUmadWireFailRetries: a try the network reports undelivered (Fail)
// is a try that came to nothing: the next goes at once while retries are
// left, then the request comes back timed out, long before its timeouts
// would have passed. One without a timeout is resent while retries are
// left, then waits on.
func TestUmadWireFailRetries(t *testing.T) {
	n := newUmadNet(t)
	w := &umadTestWire{}
	n.fab.SetWire(w)
	f, fd := umadOpenPKey(t, n.ib1)
	a := umadMustReg(t, fd, abi.RegReq2{QPN: 1})
	h := umadTo(n.ib2, a)
	h.TimeoutMs, h.Retries = 10_000, 2
	start := time.Now()
	if err := umadWrite(fd, 64, h, umadMAD(0x04, 1, 0x01, 7)); err != nil {
		t.Fatal(err)
	}
	for try := 1; try <= 3; try++ {
		if sent, _ := w.count(); sent != try {
			t.Fatalf("before report %d: %d sent, want %d", try, sent, try)
		}
		n.fab.Fail(n.ib1, w.last())
	}
	th, tm := umadRecv(t, fd, 64)
	if th.Status != uint32(syscall.ETIMEDOUT) || binary.BigEndian.Uint32(tm[12:16]) != 7 {
		t.Fatalf("record %+v % x, want the request timed out", th, tm[:16])
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the reports took %v to end the request", el)
	}
	if sent, _ := w.count(); sent != 3 || f.Outstanding() != 0 {
		t.Fatalf("%d sent, %d outstanding; want 1 + 2 retries, none", sent, f.Outstanding())
	}
	// A report for a request no longer there changes nothing.
	n.fab.Fail(n.ib1, w.last())
	umadNoRecord(t, fd)

	// Without a timeout: resent once (retries 1), then it waits.
	h.TimeoutMs, h.Retries = 0xffffffff, 1
	if err := umadWrite(fd, 64, h, umadMAD(0x04, 1, 0x01, 8)); err != nil {
		t.Fatal(err)
	}
	n.fab.Fail(n.ib1, w.last())
	n.fab.Fail(n.ib1, w.last())
	if sent, _ := w.count(); sent != 5 || f.Outstanding() != 1 {
		t.Fatalf("%d sent, %d outstanding; want 5 and the request waiting", sent, f.Outstanding())
	}
	umadNoRecord(t, fd)
}

// TestUmadWireStall: a StallWire that says it is stalled holds timeouts
// off (no resend, no retry used); once it says it is not, the tries go
// on as usual.
func TestUmadWireStall(t *testing.T) {
	n := newUmadNet(t)
	w := &umadTestWire{stalled: true}
	n.fab.SetWire(w)
	_, fd := umadOpenPKey(t, n.ib1)
	a := umadMustReg(t, fd, abi.RegReq2{QPN: 1})
	h := umadTo(n.ib2, a)
	h.TimeoutMs, h.Retries = 10, 1
	if err := umadWrite(fd, 64, h, umadMAD(0x04, 1, 0x01, 9)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, asked := w.count(); asked >= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if sent, asked := w.count(); sent != 1 || asked < 5 {
		t.Fatalf("stalled: %d sent, asked %d times; want 1 and the timeout held off", sent, asked)
	}
	umadNoRecord(t, fd)
	w.mu.Lock()
	w.stalled = false
	w.mu.Unlock()
	th, _ := umadRecv(t, fd, 64)
	if th.Status != uint32(syscall.ETIMEDOUT) {
		t.Fatalf("record %+v, want timed out", th)
	}
	if sent, _ := w.count(); sent != 2 {
		t.Fatalf("%d sent, want 1 + 1 retry", sent)
	}
}
