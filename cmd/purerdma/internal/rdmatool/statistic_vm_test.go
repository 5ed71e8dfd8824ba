//go:build integration

package rdmatool

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/rdmanl"
	"github.com/purerdma/rdma/uverbs"
)

// rdmaOut runs iproute2's rdma and returns its stdout, stderr and status.
func rdmaOut(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	c := exec.Command("rdma", args...)
	c.Stdout, c.Stderr = &out, &errb
	code := 0
	var ee *exec.ExitError
	if err := c.Run(); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// mockQPWithFlow makes a RAW_PACKET QP on mock0, moves it to INIT on port
// 1 (where the core binds it to a counter in auto mode: verbs.c
// _ib_modify_qp, counters.c rdma_counter_bind_qp_auto) and steers frames
// to dst to it with a DONT_TRAP flow. It returns the QP number.
func mockQPWithFlow(t *testing.T, dst flow.MAC) uint32 {
	t.Helper()
	c, err := uverbs.Open("mock0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(uverbs.CQAttr{CQE: 16})
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRawPacket, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxRecvWR: 16, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateInit, Port: 1}, uverbs.QPAttrState|uverbs.QPAttrPort); err != nil {
		t.Fatal(err)
	}
	all := flow.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	f, err := flow.Create(qp, &flow.Attr{Type: flow.AttrNormal, Port: 1, Flags: flow.FlagDontTrap, Specs: []flow.Spec{
		&flow.Eth{Value: flow.EthFilter{DstMAC: dst}, Mask: flow.EthFilter{DstMAC: all}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(); qp.Close(); cq.Close(); pd.Close() })
	return qp.Num()
}

// TestVMStatisticMatchesRdma: with mock0's port in auto mode (by QP type),
// a QP that frames are steered to is bound to a counter that counts them
// (out_of_buffer: mock0 has no receive queue), and purerdma statistic
// prints what rdma statistic prints, byte for byte, text and -j: show, qp
// show, qp mode, for every port and for mock0/1, and the errors.
func TestVMStatisticMatchesRdma(t *testing.T) {
	vmtest.RequireMock(t)
	vmtest.WaitQuiet(t, time.Second)
	if out, errs, code := rdmaOut(t, "statistic", "qp", "set", "link", "mock0/1", "auto", "type", "on"); code != 0 {
		t.Fatalf("rdma statistic qp set: exit %d %q %q", code, out, errs)
	}
	t.Cleanup(func() { rdmaOut(t, "statistic", "qp", "set", "link", "mock0/1", "auto", "off") })
	before, err := rdmanl.New().PortStatsByName("mock0", 1)
	if err != nil {
		t.Fatal(err)
	}
	qpn := mockQPWithFlow(t, flow.MAC{0, 1, 2, 3, 4, 6})
	vmtest.SendFrames(t, 20, &vmtest.Frame{Dst: [6]byte{0, 1, 2, 3, 4, 6}, Len: 100})

	d, err := rdmanl.New().Device("mock0")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := rdmanl.New().QPCounters(d.Index)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || len(cs[0].QPNs) != 1 || cs[0].QPNs[0] != qpn || cs[0].Mode != rdmanl.CounterModeAuto ||
		len(cs[0].Counters) != 1 || cs[0].Counters[0].Name != "out_of_buffer" || cs[0].Counters[0].Value != 20 {
		t.Errorf("QP counters %+v, want one auto counter with QP %d and out_of_buffer 20", cs, qpn)
	}
	after, err := rdmanl.New().PortStatsByName("mock0", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Counters) != 1 || after.Counters[0].Value-before.Counters[0].Value != 20 {
		t.Errorf("port statistic %+v then %+v, want out_of_buffer 20 more", before, after)
	}
	m, err := rdmanl.New().CounterMode(d.Index, 1)
	if err != nil || m.Mode != rdmanl.CounterModeAuto || m.Mask == nil || *m.Mask != 1 {
		t.Errorf("mode %+v %v", m, err)
	}
	for _, args := range [][]string{
		{}, {"show"}, {"show", "link", "mock0/1"}, {"show", "link", "rxe0/1"},
		{"qp"}, {"qp", "show"}, {"qp", "show", "link", "mock0/1"}, {"qp", "show", "link", "rxe1/1"},
		{"qp", "mode"}, {"qp", "mode", "link", "mock0/1"}, {"qp", "mode", "link", "rxe0/1"},
		// what rdma refuses, and how
		{"show", "link", "mock0"}, {"show", "link", "mock0/9"}, {"show", "link", "nosuch/1"}, {"show", "link", "mock0/x"},
		{"show", "link"}, {"qp", "mode", "link", "mock0"}, {"qp", "show", "link", "mock0/2"},
		{"show", "bogus"}, {"qp", "bogus"}, {"bogus"}, {"show", "link", "mock0/1", "extra"},
	} {
		for _, j := range [][]string{nil, {"-j"}} {
			cout, cerr, ccode := rdmaOut(t, append(append(append([]string{}, j...), "statistic"), args...)...)
			gout, gerr, gcode := runTool(DefaultEnv(), append(append([]string{"statistic"}, j...), args...)...)
			if gout != cout || gerr != cerr || gcode != ccode {
				t.Errorf("rdma %s statistic %s (kernel %s):\nrdma:     exit %d, stdout %q, stderr %q\npurerdma: exit %d, stdout %q, stderr %q",
					strings.Join(j, ""), strings.Join(args, " "), vmtest.Kernel(), ccode, cout, cerr, gcode, gout, gerr)
				continue
			}
			t.Logf("%s statistic %s: identical: %q", strings.Join(j, ""), strings.Join(args, " "), cout)
		}
	}
}
