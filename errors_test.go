package rdma_test

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/testmodel/verbstest"
	"github.com/purerdma/rdma/rdmacm"
	"github.com/purerdma/rdma/sysfs"
	"github.com/purerdma/rdma/umad"
	"github.com/purerdma/rdma/uverbs"
)

// hints are every hint the error model can add.
var hints = func() []string {
	var h []string
	for _, e := range []syscall.Errno{syscall.EPERM, syscall.ENOENT, syscall.EOPNOTSUPP, syscall.EBUSY, syscall.ENOTTY, syscall.EIO} {
		h = append(h, errs.Hint(e))
	}
	return h
}()

// TestOneErrorType walks failure paths of every package on the fake
// kernel and fixture-less roots: each error is an *rdma.Error (errors.As),
// none wraps another *rdma.Error, and no hint shows twice in a message.
func TestOneErrorType(t *testing.T) {
	empty := t.TempDir()
	b := verbstest.New(t, verbstest.MLX5(), verbstest.RXE())
	mlx5 := b.Open(t, "mlx5_0")
	rxe := b.Open(t, "rxe0")
	qp := verbstest.RawQP(t, mlx5)
	udRxe := verbstest.QP(t, rxe, uverbs.QPTypeUD)
	cs, err := counters.Create(mlx5, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed, err := counters.Create(mlx5, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	fs, err := sysfs.New(empty)
	if err != nil {
		t.Fatal(err)
	}
	host := &umad.Host{Sysfs: fs, DevDir: empty}

	cases := map[string]error{}
	add := func(name string, err error) {
		if err == nil {
			t.Errorf("%s: no error", name)
			return
		}
		cases[name] = err
	}
	add("uverbs.Open of no device", second(uverbs.Open("nosuch", b.Opts)))
	add("uverbs.QueryPort 7", second(mlx5.QueryPort(7)))
	add("uverbs.CreateCQ too big", second(mlx5.CreateCQ(uverbs.CQAttr{CQE: 1 << 31})))
	add("counters.Create on rxe", second(counters.Create(rxe, nil)))
	add("counters.Read unbound", cs.Read(make([]uint64, 1), 0))
	add("counters.Attach bad description", cs.Attach(counters.AttachAttr{Desc: 9}, nil))
	add("counters.Read closed", closed.Read(make([]uint64, 1), 0))
	add("flow.Create on rxe", second(flow.Create(udRxe, &flow.Attr{Port: 1})))
	add("flow.Create priority 16", second(flow.Create(qp, &flow.Attr{Port: 1, Priority: 16})))
	add("flow.Create nil", second(flow.Create(nil, nil)))
	add("flow.DecodeSpecs", second(flow.DecodeSpecs([]byte{1, 2, 3}, 1)))
	add("sysfs.CAs of an empty root", second(fs.CAs()))
	add("sysfs.Port of no CA", second(fs.Port("nosuch", 1)))
	add("umad.OpenPort of no CA", second(host.OpenPort("nosuch", 1)))
	add("umad.LookupCA of no CA", second(host.LookupCA("nosuch")))
	add("counters.Describe of no device", second(counters.DescribeWith("nosuch", &counters.Options{Sysfs: fs})))

	for name, err := range cases {
		var e *rdma.Error
		if !errors.As(err, &e) {
			t.Errorf("%s: %T %v is not an *rdma.Error", name, err, err)
			continue
		}
		var inner *rdma.Error
		if errors.As(e.Err, &inner) {
			t.Errorf("%s: %q wraps another *rdma.Error %q", name, e.Op, inner.Op)
		}
		msg := err.Error()
		for _, h := range hints {
			if n := strings.Count(msg, h); n > 1 {
				t.Errorf("%s: hint %q %d times in %q", name, h, n, msg)
			}
		}
		t.Logf("%s: %v", name, err)
	}
	// The kinds still match through the one type.
	if !errors.Is(cases["counters.Create on rxe"], rdma.ErrNotSupported) ||
		!errors.Is(cases["uverbs.Open of no device"], os.ErrNotExist) ||
		!errors.Is(cases["counters.Read closed"], os.ErrClosed) ||
		!errors.Is(cases["flow.Create priority 16"], syscall.ENOMEM) {
		t.Error("errors.Is through *rdma.Error")
	}
}

// New folds an inner Error into the outer one.
func TestNewFolds(t *testing.T) {
	in := errs.New("EX_CREATE_FLOW", "mlx5_0", syscall.EBUSY)
	out := errs.New("create flow", "mlx5_0", in)
	if out.Op != "create flow: EX_CREATE_FLOW" || out.Device != "mlx5_0" || out.Err != syscall.EBUSY {
		t.Errorf("%+v", *out)
	}
	if n := strings.Count(out.Error(), errs.Hint(syscall.EBUSY)); n != 1 {
		t.Errorf("hint %d times: %s", n, out)
	}
}

func second[T any](_ T, err error) error { return err }

// A wrapper whose words follow the inner error is not folded: its words
// would be lost.
func TestNewKeepsTrailingWords(t *testing.T) {
	in := errs.New("EX_CREATE_FLOW", "mlx5_0", syscall.EBUSY)
	out := errs.New("create flow", "mlx5_0", fmt.Errorf("%w (while binding)", in))
	if !strings.Contains(out.Error(), "while binding") {
		t.Errorf("lost the wrapper's words: %v", out)
	}
	folded := errs.New("create flow", "mlx5_0", fmt.Errorf("bind: %w", in))
	if folded.Op != "create flow: bind: EX_CREATE_FLOW" || folded.Err != syscall.EBUSY {
		t.Errorf("%+v", *folded)
	}
}

// Error is defined in the root package, so that go doc shows its fields
// and methods, and every package's Error (abi's too) is that one type.
func TestErrorDefinedHere(t *testing.T) {
	ty := reflect.TypeFor[rdma.Error]()
	if ty.PkgPath() != "github.com/purerdma/rdma" || ty.Name() != "Error" || ty.Kind() != reflect.Struct {
		t.Errorf("rdma.Error is %s.%s, a %s", ty.PkgPath(), ty.Name(), ty.Kind())
	}
	for _, other := range []reflect.Type{
		reflect.TypeFor[abi.Error](), reflect.TypeFor[counters.Error](), reflect.TypeFor[flow.Error](),
		reflect.TypeFor[rdmacm.Error](), reflect.TypeFor[sysfs.Error](), reflect.TypeFor[umad.Error](),
		reflect.TypeFor[uverbs.Error](), reflect.TypeFor[errs.Error](),
	} {
		if other != ty {
			t.Errorf("%s.%s is not rdma.Error", other.PkgPath(), other.Name())
		}
	}
	if rdma.ErrNotSupported != errs.ErrNotSupported || rdma.ErrNotSupported != uverbs.ErrNotSupported {
		t.Error("ErrNotSupported is not one value")
	}
}

// errors.Is and errors.As through an Error, built directly or by New, and
// wrapped again by a caller.
func TestErrorIsAs(t *testing.T) {
	for _, tc := range []struct {
		errno syscall.Errno
		match []error
		not   []error
	}{
		{syscall.EPERM, []error{syscall.EPERM, os.ErrPermission}, []error{os.ErrNotExist, rdma.ErrNotSupported, syscall.EACCES}},
		{syscall.EACCES, []error{syscall.EACCES, os.ErrPermission}, []error{os.ErrNotExist}},
		{syscall.ENOENT, []error{syscall.ENOENT, os.ErrNotExist}, []error{os.ErrPermission, syscall.ENODEV}},
		{syscall.ENODEV, []error{os.ErrNotExist}, []error{rdma.ErrNotSupported}},
		{syscall.ENXIO, []error{os.ErrNotExist}, []error{os.ErrPermission}},
		{syscall.EPROTONOSUPPORT, []error{rdma.ErrNotSupported, errors.ErrUnsupported}, []error{os.ErrNotExist}},
		{syscall.EOPNOTSUPP, []error{rdma.ErrNotSupported, errors.ErrUnsupported, syscall.ENOTSUP}, []error{os.ErrPermission}},
		{syscall.EBUSY, []error{syscall.EBUSY}, []error{rdma.ErrNotSupported, os.ErrNotExist, os.ErrPermission, syscall.EINVAL}},
		{syscall.EINVAL, []error{syscall.EINVAL}, []error{rdma.ErrNotSupported, os.ErrNotExist}},
	} {
		built := map[string]error{
			"literal":       &rdma.Error{Op: "create cq", Device: "rxe0", Err: tc.errno},
			"New":           errs.New("create cq", "rxe0", tc.errno),
			"New of New":    errs.New("open", "rxe0", errs.New("create cq", "", tc.errno)),
			"wrapped":       fmt.Errorf("setup: %w", &rdma.Error{Op: "create cq", Device: "rxe0", Err: tc.errno}),
			"cause wrapped": &rdma.Error{Op: "create cq", Device: "rxe0", Err: fmt.Errorf("ioctl: %w", tc.errno)},
		}
		for how, err := range built {
			var e *rdma.Error
			if !errors.As(err, &e) || e.Device != "rxe0" || !strings.HasPrefix(e.Op, "create cq") && !strings.HasPrefix(e.Op, "open: create cq") {
				t.Errorf("%v %s: errors.As gave %#v", tc.errno, how, e)
				continue
			}
			if !errors.Is(e.Unwrap(), tc.errno) {
				t.Errorf("%v %s: Unwrap gave %v", tc.errno, how, e.Unwrap())
			}
			for _, target := range tc.match {
				if !errors.Is(err, target) {
					t.Errorf("%v %s: errors.Is(%v) is false", tc.errno, how, target)
				}
			}
			for _, target := range tc.not {
				if errors.Is(err, target) {
					t.Errorf("%v %s: errors.Is(%v) is true", tc.errno, how, target)
				}
			}
			if msg := err.Error(); !strings.Contains(msg, "rxe0: ") || !strings.Contains(msg, tc.errno.Error()) {
				t.Errorf("%v %s: message %q", tc.errno, how, msg)
			}
		}
	}
	// A cause without an errno: a sentinel, and errs.NotSupported.
	if err := (&rdma.Error{Op: "close", Err: os.ErrClosed}); !errors.Is(err, os.ErrClosed) || errors.Is(err, os.ErrNotExist) {
		t.Errorf("os.ErrClosed cause: %v", err)
	}
	if err := errs.New("create counters", "rxe0", errs.NotSupported("no provider")); !errors.Is(err, rdma.ErrNotSupported) || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("NotSupported cause: %v", err)
	}
	if got := (*rdma.Error)(nil).Error(); got != "<nil>" {
		t.Errorf("nil Error: %q", got)
	}
	if got, want := (&rdma.Error{Op: "query port", Device: "rxe0/1", Err: syscall.EBUSY}).Error(),
		"query port rxe0/1: device or resource busy ("+errs.Hint(syscall.EBUSY)+")"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
