package rdma_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/testmodel/verbstest"
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
	host := &umad.Host{SysfsRoot: empty, DevDir: empty}

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
