package umad

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/umad/internal/umadmodel"
)

const (
	tVendorClass = 0x30
	tOUI         = 0x001405
)

func TestRegisterSMIOnRoCE(t *testing.T) {
	e := newEnv(t, rxePair()...)
	p := e.open(t, "rxe0", 1)
	for _, class := range []MgmtClass{0x01, 0x81} {
		_, err := p.Register(class, 1, MethodMaskOf(0x01))
		if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "not supported on RoCE (no SMI)") {
			t.Fatalf("class %#x on RoCE: %v", class, err)
		}
	}
	// GSI classes work.
	if _, err := p.Register(0x04, 1, MethodMask{}); err != nil {
		t.Fatal(err)
	}
	// And when the local check is bypassed (a port sysfs calls IB), the
	// kernel's EPROTONOSUPPORT gives the same error.
	p.linkLayer = rdma.LinkLayerUnspecified
	_, err := p.Register(0x81, 1, MethodMask{})
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, syscall.EPROTONOSUPPORT) || !strings.Contains(err.Error(), "no SMI") {
		t.Fatalf("kernel refusal: %v", err)
	}
}

func TestRegisterSMIOnInfiniBand(t *testing.T) {
	e := newEnv(t, ibPair()...)
	p := e.open(t, "mlx5_0", 1)
	if _, err := p.Register(0x81, 1, MethodMaskOf(0x01, 0x02)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Register(0x01, 1, MethodMask{}); err != nil {
		t.Fatal(err)
	}
}

func TestRegisterKernelErrnos(t *testing.T) {
	e := newEnv(t, ibPair()...)
	p := e.open(t, "mlx5_0", 1)
	q := e.open(t, "mlx5_0", 1)
	if _, err := p.Register(0x04, 1, MethodMaskOf(0x01)); err != nil {
		t.Fatal(err)
	}
	// The same (class, version, method) on the same port: EINVAL, whoever
	// asks (libibumad would say EPERM; the kernel's errno is kept).
	for _, port := range []*Port{p, q} {
		if _, err := port.Register(0x04, 1, MethodMaskOf(0x01)); !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("duplicate method: %v", err)
		}
	}
	if _, err := p.Register(0x04, 0x83, MethodMask{}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("class version 0x83: %v", err)
	}
	for i := 1; i < 32; i++ {
		if _, err := p.Register(0, 0, MethodMask{}); err != nil {
			t.Fatalf("agent %d: %v", i, err)
		}
	}
	if _, err := p.Register(0, 0, MethodMask{}); !errors.Is(err, syscall.ENOMEM) || !strings.Contains(err.Error(), "32 agents") ||
		!strings.Contains(err.Error(), "IB_UMAD_MAX_AGENTS") {
		t.Fatalf("33rd agent: %v, want ENOMEM saying the kernel's limit is 32 agents", err)
	}
	if _, err := p.Register(0, 0, MethodMaskOf(1)); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("methods without a class: %v", err)
	}
}

func TestRegisterOUI(t *testing.T) {
	e := newEnv(t, rxePair()...)
	p := e.open(t, "rxe0", 1)
	for _, class := range []MgmtClass{0x2f, 0x50, 0x04} {
		if _, err := p.RegisterOUI(class, 0, tOUI, MethodMask{}); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "vendor range 2") {
			t.Fatalf("class %#x: %v", class, err)
		}
	}
	for _, oui := range []uint32{0, 1 << 24} {
		if _, err := p.RegisterOUI(tVendorClass, 0, oui, MethodMask{}); !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("oui %#x: %v", oui, err)
		}
	}
	a, err := p.RegisterOUI(tVendorClass, 1, tOUI, MethodMaskOf(0x01))
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.RegisterOUI(tVendorClass, 0, 0x0002c9, MethodMaskOf(0x01)) // another OUI: no clash
	if err != nil || a == b {
		t.Fatal(a, b, err)
	}
	// Register with a vendor class uses the OpenIB OUI, as libibumad does.
	if _, err := p.Register(tVendorClass, 1, MethodMaskOf(0x01)); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Register must have used OUI %#x and clashed: %v", tOUI, err)
	}
	if _, err := p.RegisterAgent(Registration{Class: 0x03, Version: 2, RMPPVersion: 1, UserRMPP: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RegisterAgent(Registration{UserRMPP: true}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("send-only agent with user RMPP: %v", err)
	}
}

func TestRegisterFallsBackToAgent1(t *testing.T) {
	// A kernel older than 3.16.
	e := newEnvWith(t, func(c *umadmodel.PortConfig) { c.NoRegisterAgent2 = true }, ibPair()...)
	p := e.open(t, "mlx5_0", 1)
	id, err := p.Register(0x04, 1, MethodMaskOf(0x01))
	if err != nil {
		t.Fatal(err)
	}
	if !p.noAgent2.Load() {
		t.Fatal("the ENOTTY must be remembered")
	}
	if _, err := p.Register(0x04, 1, MethodMaskOf(0x02)); err != nil {
		t.Fatal(err)
	}
	if err := p.Unregister(id); err != nil {
		t.Fatal(err)
	}
	// Flags cannot be carried by the old request: no fallback.
	if _, err := p.RegisterAgent(Registration{Class: 0x03, Version: 2, RMPPVersion: 1, UserRMPP: true}); !errors.Is(err, syscall.ENOTTY) {
		t.Fatalf("user RMPP on an old kernel: %v", err)
	}
}

func TestUnregister(t *testing.T) {
	e := newEnv(t, ibPair()...)
	p := e.open(t, "mlx5_0", 1)
	id, err := p.Register(0x04, 1, MethodMaskOf(0x01))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Unregister(id); err != nil {
		t.Fatal(err)
	}
	if err := p.Unregister(id); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("twice: %v", err)
	}
	if err := p.Unregister(32); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("id 32: %v", err)
	}
	// The method is free again.
	if _, err := p.Register(0x04, 1, MethodMaskOf(0x01)); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if err := p.Unregister(0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
	if _, err := p.Register(0x04, 1, MethodMask{}); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
}

// TestRegisterTypes: Register and MethodMaskOf take the types the MAD
// header uses (MgmtClass, Method), so a header's fields pass as they are.
func TestRegisterTypes(t *testing.T) {
	e := newEnv(t, rxePair()...)
	p := e.open(t, "rxe0", 1)
	h := NewMADHeader(ClassPerfMgmt, MethodGet, 0, 0, 1)
	m := MethodMaskOf(h.Method, MethodGetResp)
	if !m.Has(uint8(MethodGet)) || m.Has(uint8(MethodSet)) || m != MethodMaskOf(MethodGet) {
		t.Fatalf("MethodMaskOf(Get, GetResp) = %#x", m)
	}
	if _, err := p.Register(h.MgmtClass, h.ClassVersion, m); err != nil {
		t.Fatal(err)
	}
}
