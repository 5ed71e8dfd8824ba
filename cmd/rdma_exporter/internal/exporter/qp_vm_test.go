//go:build integration

package exporter

import (
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/uverbs"
)

// QP counters on mock0 (its port in auto mode by QP type): the exporter's
// rdma_qp_statistic_total is the frames steered to the QP, and
// rdma_qp_counter_qp_info names the QP.
func TestVMQPCounterSeries(t *testing.T) {
	vmtest.RequireMock(t)
	vmtest.WaitQuiet(t, time.Second)
	if out, err := exec.Command("rdma", "statistic", "qp", "set", "link", "mock0/1", "auto", "type", "on").CombinedOutput(); err != nil {
		t.Fatalf("rdma statistic qp set: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("rdma", "statistic", "qp", "set", "link", "mock0/1", "auto", "off").Run() })
	c, err := uverbs.Open("mock0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
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
	defer qp.Close()
	if err := qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateInit, Port: 1}, uverbs.QPAttrState|uverbs.QPAttrPort); err != nil {
		t.Fatal(err)
	}
	dst := flow.MAC{0, 1, 2, 3, 4, 7}
	f, err := flow.Create(qp, &flow.Attr{Type: flow.AttrNormal, Port: 1, Flags: flow.FlagDontTrap, Specs: []flow.Spec{
		&flow.Eth{Value: flow.EthFilter{DstMAC: dst}, Mask: flow.EthFilter{DstMAC: flow.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vmtest.SendFrames(t, 15, &vmtest.Frame{Dst: dst, Len: 80})

	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	m := gather(t, e)
	info := m["rdma_qp_counter_qp_info"]
	id := ""
	for _, s := range info {
		l := map[string]string{}
		for _, p := range s.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["device"] == "mock0" && l["qpn"] == strconv.FormatUint(uint64(qp.Num()), 10) {
			id = l["counter_id"]
		}
	}
	if id == "" {
		t.Fatalf("no rdma_qp_counter_qp_info for QP %d: %v", qp.Num(), info)
	}
	if v := value(t, m["rdma_qp_statistic_total"], map[string]string{"device": "mock0", "port": "1", "counter_id": id, "counter": "out_of_buffer"}); v != 15 {
		t.Errorf("rdma_qp_statistic_total = %v, want 15", v)
	}
	if v := value(t, m["rdma_exporter_source_up"], map[string]string{"source": SourceNetlink}); v != 1 {
		t.Errorf("netlink source up = %v", v)
	}
	t.Logf("Linux %s: QP %d on counter %s", vmtest.Kernel(), qp.Num(), id)
}
