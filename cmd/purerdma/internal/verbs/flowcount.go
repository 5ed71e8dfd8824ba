package verbs

// flowcount: the example program of ibv_read_counters(3) as a command — a
// counters object with packets at index 0 and bytes at index 1 attached
// statically, a RAW_PACKET QP, an L2 flow on a destination MAC with the
// count action, and a read with PreferCached every interval printing
// PACKETS and BYTES. Everything is released on exit and on Ctrl-C.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/uverbs"
)

const flowcountUsage = `Usage: purerdma flowcount -d DEV -p PORT --dst-mac MAC [--interval 1s] [--count N]

Counts the packets and bytes a port receives for a destination MAC address,
as the example program of ibv_read_counters(3) does: a verbs counters object
(packets at index 0, bytes at index 1, attached statically), a RAW_PACKET QP
and an L2 flow on the MAC with the count action, read every interval.
Needs a device with verbs counters (mlx5) and CAP_NET_RAW.

Options:
  -d, --ib-dev=DEV       the RDMA device
  -p, --ib-port=PORT     the port (default 1)
  -m, --dst-mac=MAC      the destination MAC address to count
  -i, --interval=D       time between reads (default 1s)
  -c, --count=N          stop after N reads (default 0: until interrupted)
  -r, --receive=N        also post N receives on the QP and count the frames
                         that arrive in it (RECEIVED, with their bytes),
                         reposting each (a frame that finds none posted is
                         dropped, and counted all the same)
  -h, --help             this help
`

type flowcountArgs struct {
	dev      string
	port     int
	mac      flow.MAC
	interval time.Duration
	count    int
	receive  int // receives posted on the QP (0: none, as the man page's example)
}

// flowcountFrame is the room each posted receive gives a frame.
const flowcountFrame = 2048

func (env *Env) runFlowcount(args []string, stdout, stderr io.Writer) error {
	a := flowcountArgs{port: 1, interval: time.Second}
	haveMAC := false
	bad := func(format string, v ...any) error { return fmt.Errorf(format, v...) }
	opts := []cli.Option{
		{Short: 'd', Long: "ib-dev", Arg: true, Set: func(v string) error { a.dev = v; return nil }},
		{Short: 'p', Long: "ib-port", Arg: true, Set: func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 255 {
				return bad("invalid port %q", v)
			}
			a.port = n
			return nil
		}},
		{Short: 'm', Long: "dst-mac", Arg: true, Set: func(v string) error {
			hw, err := net.ParseMAC(v)
			if err != nil || len(hw) != 6 {
				return bad("invalid MAC address %q", v)
			}
			copy(a.mac[:], hw)
			haveMAC = true
			return nil
		}},
		{Short: 'i', Long: "interval", Arg: true, Set: func(v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return bad("invalid interval %q", v)
			}
			a.interval = d
			return nil
		}},
		{Short: 'c', Long: "count", Arg: true, Set: func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return bad("invalid count %q", v)
			}
			a.count = n
			return nil
		}},
		{Short: 'r', Long: "receive", Arg: true, Set: func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 4096 {
				return bad("invalid receive count %q (0 to 4096)", v)
			}
			a.receive = n
			return nil
		}},
		{Short: 'h', Long: "help", Set: func(string) error { return cli.ErrHelp }},
	}
	if err := cli.Getopt("flowcount", args, opts, stderr); err != nil {
		if errors.Is(err, cli.ErrHelp) {
			fmt.Fprint(stdout, flowcountUsage)
			return nil
		}
		if _, ok := err.(cli.GetoptError); !ok {
			fmt.Fprintf(stderr, "flowcount: %v\n", err)
		}
		fmt.Fprint(stderr, flowcountUsage)
		return cli.ExitError{Code: 2}
	}
	if a.dev == "" || !haveMAC {
		fmt.Fprintln(stderr, "flowcount: -d DEV and --dst-mac MAC are required")
		fmt.Fprint(stderr, flowcountUsage)
		return cli.ExitError{Code: 2}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := env.flowcount(ctx, a, stdout); err != nil {
		fmt.Fprintln(stderr, "flowcount:", err)
		return cli.ExitError{Code: 1}
	}
	return nil
}

// flowcount runs the example; its error is one line naming the device.
func (env *Env) flowcount(ctx context.Context, a flowcountArgs, stdout io.Writer) (err error) {
	c, err := uverbs.Open(a.dev, env.Flowcount)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := c.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	dev := c.Device()

	// The port is checked here, not left to the flow: the core refuses a
	// flow on a port the device lacks with a bare EINVAL
	// (uverbs_cmd.c, ib_uverbs_ex_create_flow: rdma_is_port_valid).
	attr, err := c.QueryDevice()
	if err != nil {
		return err
	}
	if a.port > int(attr.PhysPortCnt) {
		ports := "ports 1 to " + strconv.Itoa(int(attr.PhysPortCnt))
		if attr.PhysPortCnt == 1 {
			ports = "port 1 only"
		}
		return fmt.Errorf("%s has no port %d (it has %s)", dev.Name, a.port, ports)
	}

	// Create the counters object and define its counter points.
	cs, err := counters.Create(c, nil)
	if errors.Is(err, counters.ErrNotSupported) {
		return fmt.Errorf("%s: verbs counters are not supported on this device (the %s driver has none; mlx5 has them)", dev.Name, dev.DriverID)
	}
	if err != nil {
		return err
	}
	for i, d := range []counters.Description{counters.Packets, counters.Bytes} {
		err := cs.Attach(counters.AttachAttr{Desc: d, Index: uint32(i)}, nil)
		if errors.Is(err, syscall.ENOTSUP) {
			return fmt.Errorf("%s: attaching %s counters to a flow is not supported", dev.Name, d)
		}
		if err != nil {
			return err
		}
	}

	// The RAW_PACKET QP the flow steers to.
	pd, err := c.AllocPD()
	if err != nil {
		return err
	}
	defer pd.Close()
	cq, err := c.CreateCQ(uverbs.CQAttr{CQE: max(16, a.receive)})
	if err != nil {
		return err
	}
	defer cq.Close()
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRawPacket, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxRecvWR: uint32(max(16, a.receive)), MaxRecvSGE: 1}})
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("%s: a RAW_PACKET QP needs CAP_NET_RAW: run as root or grant the capability", dev.Name)
	}
	if err != nil {
		return err
	}
	defer qp.Close()
	defer cs.Close() // after the flow, before the QP (the man page's order)

	// With --receive, the receives are posted before the flow exists, so
	// that every frame it steers finds one.
	rx, err := newFlowcountRx(pd, qp, a)
	if err != nil {
		return err
	}
	if rx != nil {
		defer rx.mr.Close()
	}

	// A simple L2 flow on the MAC, with the count action.
	all := flow.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	f, err := flow.Create(qp, &flow.Attr{Type: flow.AttrNormal, Port: a.port, Specs: []flow.Spec{
		&flow.Eth{Value: flow.EthFilter{DstMAC: a.mac}, Mask: flow.EthFilter{DstMAC: all}},
		&flow.Count{Counters: cs},
	}})
	if err != nil {
		return err
	}
	defer f.Close()

	values := make([]uint64, 2)
	tick := time.NewTicker(a.interval)
	defer tick.Stop()
	for n := 0; a.count == 0 || n < a.count; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if ctx.Err() != nil {
				return nil // both were ready: the interrupt wins
			}
		}
		if env.FlowcountTick != nil {
			env.FlowcountTick()
		}
		if err := cs.Read(values, counters.PreferCached); err != nil {
			return err
		}
		if rx == nil {
			fmt.Fprintf(stdout, "PACKETS = %d, BYTES = %d\n", values[0], values[1])
			continue
		}
		if err := rx.drain(cq, qp); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "PACKETS = %d, BYTES = %d, RECEIVED = %d, RECEIVED BYTES = %d\n", values[0], values[1], rx.frames, rx.bytes)
	}
	return nil
}

// flowcountRx is --receive: the frames the flow steers into the QP's
// receive queue, counted as they complete.
type flowcountRx struct {
	mr            *uverbs.MR
	wr            []uverbs.RecvWR
	wc            []uverbs.WC
	frames, bytes uint64
}

// newFlowcountRx moves the QP to RTR (a RAW_PACKET QP receives from then
// on) and posts a.receive receives, or returns nil without --receive.
func newFlowcountRx(pd *uverbs.PD, qp *uverbs.QP, a flowcountArgs) (*flowcountRx, error) {
	if a.receive == 0 {
		return nil, nil
	}
	if err := qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateInit, Port: a.port}, uverbs.QPAttrState|uverbs.QPAttrPort); err != nil {
		return nil, err
	}
	if err := qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateRTR}, uverbs.QPAttrState); err != nil {
		return nil, err
	}
	mr, err := pd.AllocMR(a.receive*flowcountFrame, uverbs.AccessLocalWrite)
	if err != nil {
		return nil, err
	}
	rx := &flowcountRx{mr: mr, wr: make([]uverbs.RecvWR, a.receive), wc: make([]uverbs.WC, 64)}
	for i := range rx.wr {
		sge, _ := mr.SGE(i*flowcountFrame, flowcountFrame)
		rx.wr[i] = uverbs.RecvWR{ID: uint64(i), SGL: []uverbs.SGE{sge}}
	}
	if n, err := qp.PostRecv(rx.wr); err != nil {
		mr.Close()
		return nil, fmt.Errorf("post %d receives: %d posted: %w", a.receive, n, err)
	}
	return rx, nil
}

// drain counts the receives that completed and posts each again.
func (rx *flowcountRx) drain(cq *uverbs.CQ, qp *uverbs.QP) error {
	for {
		n, err := cq.Poll(rx.wc)
		if err != nil {
			return err
		}
		for _, w := range rx.wc[:n] {
			if w.Status != uverbs.WCSuccess || w.ID >= uint64(len(rx.wr)) {
				return fmt.Errorf("receive completion: %v (wr %d)", w.Status, w.ID)
			}
			rx.frames++
			rx.bytes += uint64(w.ByteLen)
			if _, err := qp.PostRecv(rx.wr[w.ID : w.ID+1]); err != nil {
				return err
			}
		}
		if n < len(rx.wc) {
			return nil
		}
	}
}
