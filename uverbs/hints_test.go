package uverbs

import (
	"errors"
	"strings"
	"syscall"
	"testing"
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
