package uverbs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/internal/testmodel/fakekernel"
	"github.com/purerdma/rdma/internal/verbs"
)

// Every errno the package passes on is reachable with errors.Is, through
// the error model's sentinels too, and the message names the device.
func TestErrorsIs(t *testing.T) {
	b := newBed(t, rxe0(), fakekernel.MLX5("mlx5_0"))
	c := b.open(t, "rxe0")
	m := b.open(t, "mlx5_0")
	pd, _ := c.AllocPD()
	cq, _ := c.CreateCQ(CQAttr{CQE: 4})
	qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: cq, Cap: rcCap()})
	if err != nil {
		t.Fatal(err)
	}
	mpd, _ := m.AllocPD()
	mcq, _ := m.CreateCQ(CQAttr{CQE: 4})

	cases := []struct {
		name   string
		err    error
		errno  syscall.Errno
		target error
	}{
		{"EINVAL: port 9", second(c.QueryPort(9)), syscall.EINVAL, nil},
		{"EBUSY: PD with a QP", pd.Close(), syscall.EBUSY, nil},
		{"EOPNOTSUPP: QUERY_CONTEXT on rxe", second(c.QueryContext()), syscall.EOPNOTSUPP, ErrNotSupported},
		{"EOPNOTSUPP: RAW_PACKET on rxe", func() error {
			b.devs["rxe0"].NetRaw = true
			defer func() { b.devs["rxe0"].NetRaw = false }()
			return second(pd.CreateQP(QPInitAttr{Type: QPTypeRawPacket, SendCQ: cq, RecvCQ: cq, Cap: rcCap()}))
		}(), syscall.EOPNOTSUPP, ErrNotSupported},
		{"EPROTONOSUPPORT: counters on rxe", c.core.Invoke(abi.NewRequest(c.apiTable(), uint32(c.DriverID()), abi.UVERBS_OBJECT_COUNTERS, abi.UVERBS_METHOD_COUNTERS_CREATE).
			NewHandle(abi.UVERBS_ATTR_CREATE_COUNTERS_HANDLE)), syscall.EPROTONOSUPPORT, ErrNotSupported},
		{"EPERM: RAW_PACKET without CAP_NET_RAW", second(mpd.CreateQP(QPInitAttr{Type: QPTypeRawPacket, SendCQ: mcq, RecvCQ: mcq,
			Cap: QPCap{MaxRecvWR: 4, MaxRecvSGE: 1}})), syscall.EPERM, os.ErrPermission},
		{"ENOENT: unknown handle", c.core.Invoke(abi.NewRequest(c.apiTable(), uint32(c.DriverID()), abi.UVERBS_OBJECT_PD, abi.UVERBS_METHOD_PD_DESTROY).
			Handle(abi.UVERBS_ATTR_DESTROY_PD_HANDLE, 999)), syscall.ENOENT, os.ErrNotExist},
		{"ENODATA: empty GID", second(c.QueryGID(1, 7)), syscall.ENODATA, nil},
		{"ENODEV: no such device", second(Open("rxe7", b.opts)), syscall.ENODEV, os.ErrNotExist},
		{"EINVAL: modify to RTR without attributes", qp.Modify(&QPAttr{State: QPStateRTR}, QPAttrState), syscall.EINVAL, nil},
	}
	for _, tc := range cases {
		if !errors.Is(tc.err, tc.errno) {
			t.Errorf("%s: %v is not %v", tc.name, tc.err, tc.errno)
			continue
		}
		if tc.target != nil && !errors.Is(tc.err, tc.target) {
			t.Errorf("%s: %v does not match %v", tc.name, tc.err, tc.target)
		}
		var e *Error
		if !errors.As(tc.err, &e) || e.Device == "" || !strings.Contains(tc.err.Error(), e.Device) {
			t.Errorf("%s: %v: want an *Error naming the device", tc.name, tc.err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// open(2) errors keep their errno: EACCES and EPERM match os.ErrPermission,
// ENXIO os.ErrNotExist; EIO (disassociated) passes through.
func TestOpenErrors(t *testing.T) {
	b := newBed(t, rxe0())
	for _, errno := range []syscall.Errno{syscall.EACCES, syscall.EPERM, syscall.ENXIO, syscall.EIO} {
		opts := *b.opts
		opts.Opener = verbs.NewOpener(func(path string) (*sys.FD, error) { return nil, &os.PathError{Op: "open", Path: path, Err: errno} })
		_, err := Open("rxe0", &opts)
		wantErrno(t, err, errno)
		switch errno {
		case syscall.EACCES, syscall.EPERM:
			if !errors.Is(err, os.ErrPermission) {
				t.Errorf("%v does not match os.ErrPermission", err)
			}
		case syscall.ENXIO:
			if !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%v does not match os.ErrNotExist", err)
			}
		}
		if !strings.Contains(err.Error(), "/dev/infiniband/uverbs0") {
			t.Errorf("%v does not name the node", err)
		}
	}
}

// Drivers without a provider fail with ErrNotSupported naming the driver,
// unless Options.Generic, which then allows queries and PDs but not CQs.
func TestUnknownDriver(t *testing.T) {
	v := fakekernel.RXE("siw0", 0x1234, [4]byte{10, 0, 0, 1})
	v.DriverID = abi.RDMA_DRIVER_SIW
	b := newBed(t, v)
	_, err := Open("siw0", b.opts)
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "siw") {
		t.Fatalf("Open of a siw device: %v", err)
	}
	opts := *b.opts
	opts.Generic = true
	c, err := Open("siw0", &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.QueryPort(1); err != nil {
		t.Error(err)
	}
	if a, err := c.QueryDevice(); err != nil || a.FWVer != "0.0.0" {
		t.Errorf("QueryDevice = %q, %v", a.FWVer, err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	pd.Close()
	if _, err := c.CreateCQ(CQAttr{CQE: 1}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("CreateCQ with the generic provider: %v", err)
	}

	// A driver ABI version the provider does not know.
	v2 := rxe0()
	b2 := newBed(t, v2)
	os.WriteFile(b2.opts.Sysfs.Root()+"/class/infiniband_verbs/uverbs0/abi_version", []byte("3\n"), 0o644)
	if _, err := Open("rxe0", b2.opts); !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "ABI version 3") {
		t.Errorf("Open with driver ABI 3: %v", err)
	}
}

// Invalid arguments are errors (EINVAL), never panics, and are caught
// before any system call.
func TestArgumentValidation(t *testing.T) {
	b := newBed(t, rxe0(), rxe1())
	c := b.open(t, "rxe0")
	other := b.open(t, "rxe1")
	pd, _ := c.AllocPD()
	cq, _ := c.CreateCQ(CQAttr{CQE: 4})
	ocq, _ := other.CreateCQ(CQAttr{CQE: 4})
	och, _ := other.CreateCompChannel()
	qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: cq, Cap: rcCap()})
	if err != nil {
		t.Fatal(err)
	}
	var nilPD *PD
	var nilQP *QP
	var nilCQ *CQ
	var nilCtx *Context
	var nilCh *CompChannel
	calls := map[string]error{
		"CQE 0":               second(c.CreateCQ(CQAttr{CQE: 0})),
		"CQE -1":              second(c.CreateCQ(CQAttr{CQE: -1})),
		"comp vector -1":      second(c.CreateCQ(CQAttr{CQE: 1, CompVector: -1})),
		"comp vector 2":       second(c.CreateCQ(CQAttr{CQE: 1, CompVector: 2})),
		"channel of other":    second(c.CreateCQ(CQAttr{CQE: 1, Channel: och})),
		"QP without CQs":      second(pd.CreateQP(QPInitAttr{Type: QPTypeRC})),
		"QP type 0":           second(pd.CreateQP(QPInitAttr{Type: 0, SendCQ: cq, RecvCQ: cq})),
		"QP type 99":          second(pd.CreateQP(QPInitAttr{Type: 99, SendCQ: cq, RecvCQ: cq})),
		"CQ of other context": second(pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: ocq, RecvCQ: cq})),
		"nil PD":              second(nilPD.CreateQP(QPInitAttr{})),
		"nil attr":            qp.Modify(nil, QPAttrState),
		"mask past DEST_QPN":  qp.Modify(&QPAttr{}, 1<<25),
		"state 7":             qp.Modify(&QPAttr{State: 7}, QPAttrState),
		"nil QP Modify":       nilQP.Modify(&QPAttr{}, 0),
		"nil QP Query":        second3(nilQP.Query(0)),
		"nil CQ ReqNotify":    nilCQ.ReqNotify(false),
		"nil context":         second(nilCtx.AllocPD()),
		"nil context query":   second(nilCtx.QueryPort(1)),
		"nil request":         c.core.Invoke(nil),
		"nil channel":         second(nilCh.GetEvent(context.TODO())),
		"nil ctx events":      second(nilCtx.AsyncEvent(context.TODO())),
	}
	for name, err := range calls {
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", name, err)
		}
	}
	for _, f := range []func() error{nilPD.Close, nilCQ.Close, nilQP.Close, nilCh.Close, nilCtx.Close} {
		if err := f(); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Close of a nil object: %v, want EINVAL", err)
		}
	}
	if err := cq.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("CQ Close with a QP: %v", err)
	}
	qp.Close()
	cq.Close()
	if _, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("CreateQP with a destroyed CQ: %v", err)
	}
	pd.Close()
	if _, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: ocq, RecvCQ: ocq}); !errors.Is(err, os.ErrClosed) && !errors.Is(err, syscall.EINVAL) {
		t.Errorf("CreateQP on a destroyed PD: %v", err)
	}
	e := &Error{Op: "create cq", Device: "rxe0", Err: syscall.EBUSY}
	if got := e.Error(); !strings.HasPrefix(got, "create cq rxe0: device or resource busy") {
		t.Errorf("message %q", got)
	}
	_ = fmt.Sprint(e)
}

func second3[A, B any](_ A, _ B, err error) error { return err }
