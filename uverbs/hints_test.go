package uverbs

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/internal/sys"
)

// EINVAL names the limit that was crossed where the library can learn it.
func TestEINVALHints(t *testing.T) {
	b := newBed(t, rxe0())
	c := b.open(t, "rxe0")
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	// More CQEs than the device's max_cqe (32767 on rxe).
	_, err = c.CreateCQ(CQAttr{CQE: 40000})
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "40000 entries: rxe0 takes at most 32767 (max_cqe)") {
		t.Errorf("CreateCQ(40000) = %v", err)
	}
	cq, err := c.CreateCQ(CQAttr{CQE: 4})
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: rcCap()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		attr QPAttr
		mask QPAttrMask
		want string
	}{
		{QPAttr{State: QPStateRTR}, QPAttrState,
			"RESET → RTR is not a QP state transition (from RESET a QP goes to RESET, INIT)"},
		{QPAttr{State: QPStateInit, Port: 1}, QPAttrState | QPAttrPort,
			"RESET → INIT of QP type RC needs the attributes ACCESS_FLAGS|PKEY_INDEX|PORT in the mask (missing ACCESS_FLAGS|PKEY_INDEX)"},
		// With CurState given, the hint trusts it rather than ask.
		{QPAttr{State: QPStateRTS, CurState: QPStateInit}, QPAttrState | QPAttrCurState,
			"INIT → RTS is not a QP state transition (from INIT a QP goes to RESET, ERR, INIT, RTR)"},
	} {
		err := qp.Modify(&tc.attr, tc.mask)
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Modify(%v, %#x) = %v\nwant the hint %q", tc.attr.State, tc.mask, err, tc.want)
		}
		if strings.Count(err.Error(), "modify qp") != 1 {
			t.Errorf("the operation shows more than once: %v", err)
		}
	}
	// A valid transition needs no hint and gets none.
	if err := qp.Modify(&QPAttr{State: QPStateInit, Port: 1, AccessFlags: 0}, QPAttrState|QPAttrPort|QPAttrPKeyIndex|QPAttrAccessFlags); err != nil {
		t.Fatal(err)
	}
}

// A registration that RLIMIT_MEMLOCK refuses (ib_umem_get: ENOMEM) names
// the limit and how to raise it; one the limit does not explain does not.
func TestMemlockHint(t *testing.T) {
	const limit = 64 << 10
	prev, err := sys.SetMemlockLimit(limit)
	if err != nil {
		t.Skipf("cannot lower RLIMIT_MEMLOCK to %d bytes: %v", limit, err)
	}
	t.Cleanup(func() {
		if _, err := sys.SetMemlockLimit(prev); err != nil {
			t.Errorf("restore RLIMIT_MEMLOCK: %v", err)
		}
	})
	if got, ok := sys.MemlockLimit(); !ok || got != limit {
		t.Fatalf("MemlockLimit() = %d, %v after setting %d", got, ok, limit)
	}
	v := rxe0()
	v.Memlock = true
	b := newBed(t, v)
	c := b.open(t, "rxe0")
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	half, err := pd.AllocMR(limit/2, AccessLocalWrite)
	if err != nil {
		t.Fatalf("AllocMR within the limit: %v", err)
	}
	_, err = pd.AllocMR(limit, AccessLocalWrite)
	if !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("AllocMR past the limit = %v, want ENOMEM", err)
	}
	for _, want := range []string{"RLIMIT_MEMLOCK", "ulimit -l", "65536 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if err := half.Close(); err != nil {
		t.Fatal(err)
	}
	whole, err := pd.AllocMR(limit, AccessLocalWrite)
	if err != nil {
		t.Fatalf("AllocMR of the limit once the other MR is gone: %v", err)
	}
	if err := whole.Close(); err != nil {
		t.Fatal(err)
	}

	// Only ENOMEM and EPERM past the limit get the hint.
	held := pinned.Load()
	for _, tc := range []struct {
		err  error
		n    int64
		hint bool
	}{
		{syscall.ENOMEM, limit - held + 1, true},
		{syscall.EPERM, limit - held + 1, true},
		{syscall.ENOMEM, max(limit-held, 0), false},
		{syscall.EINVAL, limit - held + 1, false},
		{syscall.EFAULT, 1 << 30, false},
	} {
		got := memlockHint(tc.err, tc.n)
		if !errors.Is(got, tc.err) {
			t.Errorf("memlockHint(%v, %d) = %v: lost the errno", tc.err, tc.n, got)
		}
		if has := strings.Contains(got.Error(), "ulimit -l"); has != tc.hint {
			t.Errorf("memlockHint(%v, %d) = %q: hint %v, want %v", tc.err, tc.n, got, has, tc.hint)
		}
	}
}
