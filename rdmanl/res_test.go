package rdmanl

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/abi"
)

// resKernel answers RES_GET and RES_QP_GET as nldev.c lays them out:
// per-device messages, nested tables, u64s padded when asked.
func resKernel(pad bool) nlExecFunc {
	summary := func(idx uint32, name string, qp uint64) []byte {
		e := &nlEnc{pad: pad}
		e.u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, idx)
		e.str(abi.RDMA_NLDEV_ATTR_DEV_NAME, name)
		e.nest(abi.RDMA_NLDEV_ATTR_RES_SUMMARY, true, nlmsgHdrLen, func(t *nlEnc, base int) {
			for _, c := range []NamedCounter{{"pd", 1}, {"cq", 1}, {"qp", qp}} {
				t.nest(abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY, true, base, func(en *nlEnc, base int) {
					en.str(abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, c.Name)
					en.u64(abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR, c.Value, base)
				})
			}
		})
		return e.b
	}
	qps := func() []byte {
		e := &nlEnc{pad: pad}
		e.u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 0)
		e.str(abi.RDMA_NLDEV_ATTR_DEV_NAME, "rxe0")
		e.nest(abi.RDMA_NLDEV_ATTR_RES_QP, true, nlmsgHdrLen, func(t *nlEnc, base int) {
			t.nest(abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY, true, base, func(en *nlEnc, base int) {
				en.u32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, 1)
				en.u32(abi.RDMA_NLDEV_ATTR_RES_LQPN, 1)
				en.u8(abi.RDMA_NLDEV_ATTR_RES_TYPE, 1)
				en.u8(abi.RDMA_NLDEV_ATTR_RES_STATE, 3)
				en.u32(abi.RDMA_NLDEV_ATTR_RES_SQ_PSN, 0)
				en.str(abi.RDMA_NLDEV_ATTR_RES_KERN_NAME, "ib_core")
			})
			t.nest(abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY, true, base, func(en *nlEnc, base int) {
				en.u32(abi.RDMA_NLDEV_ATTR_RES_LQPN, 17)
				en.u8(abi.RDMA_NLDEV_ATTR_RES_TYPE, 2)
				en.u8(abi.RDMA_NLDEV_ATTR_RES_STATE, 0)
				en.u32(abi.RDMA_NLDEV_ATTR_RES_PDN, 4)
				en.u32(abi.RDMA_NLDEV_ATTR_RES_PID, 103)
				en.nest(abi.RDMA_NLDEV_ATTR_DRIVER, true, base, func(*nlEnc, int) {}) // skipped
			})
		})
		return e.b
	}
	return func(cmd, flags uint16, attrs []nlAttr) ([][]byte, error) {
		switch cmd {
		case abi.RDMA_NLDEV_CMD_RES_GET:
			if flags&syscall.NLM_F_DUMP == 0 {
				return nil, syscall.EINVAL
			}
			return [][]byte{summary(0, "rxe0", 1), summary(1, "rxe1", 2)}, nil
		case abi.RDMA_NLDEV_CMD_RES_QP_GET:
			if len(attrs) != 1 || attrs[0].typ != abi.RDMA_NLDEV_ATTR_DEV_INDEX {
				return nil, syscall.EINVAL // res_get_common_dumpit needs the device
			}
			return [][]byte{qps()}, nil
		}
		return nil, syscall.EOPNOTSUPP
	}
}

func TestResourceSummaries(t *testing.T) {
	for _, pad := range []bool{false, true} {
		n := &Conn{exec: resKernel(pad)}
		sums, err := n.ResourceSummaries()
		if err != nil {
			t.Fatal(err)
		}
		if len(sums) != 2 || sums[1].Device != "rxe1" || sums[1].Index != 1 || len(sums[1].Counts) != 3 ||
			sums[1].Counts[2] != (NamedCounter{"qp", 2}) || sums[0].Counts[0] != (NamedCounter{"pd", 1}) {
			t.Errorf("pad %v: %+v", pad, sums)
		}
	}
}

func TestResourcesQP(t *testing.T) {
	for _, pad := range []bool{false, true} {
		n := &Conn{exec: resKernel(pad)}
		qps, err := n.Resources(ResQP, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(qps) != 2 {
			t.Fatalf("%d QPs", len(qps))
		}
		k, u := qps[0], qps[1]
		if k.Device != "rxe0" || k.Port == nil || *k.Port != 1 || k.KernName == nil || *k.KernName != "ib_core" || k.PID != nil ||
			k.U32[abi.RDMA_NLDEV_ATTR_RES_LQPN] != 1 || k.U8[abi.RDMA_NLDEV_ATTR_RES_TYPE] != 1 || k.U8[abi.RDMA_NLDEV_ATTR_RES_STATE] != 3 {
			t.Errorf("kernel QP: %+v", k)
		}
		if _, has := k.U32[abi.RDMA_NLDEV_ATTR_RES_PDN]; has {
			t.Error("the kernel QP has a pdn the kernel did not send")
		}
		if u.Port != nil || u.PID == nil || *u.PID != 103 || u.KernName != nil || u.U32[abi.RDMA_NLDEV_ATTR_RES_PDN] != 4 {
			t.Errorf("user QP: %+v", u)
		}
	}
	if mustKind(t, "qp") != ResQP || !ResQP.PerPort() || ResPD.PerPort() || ResCtx.String() != "ctx" {
		t.Error("kinds")
	}
	if _, ok := ParseResourceKind("srq"); ok {
		t.Error("srq is not listed by rdma 6.1's resource show")
	}
}

func mustKind(t *testing.T, s string) ResourceKind {
	k, ok := ParseResourceKind(s)
	if !ok {
		t.Fatalf("no kind %q", s)
	}
	return k
}

// Every truncation and a wrong width fail with an error, never a panic.
func TestResourceDecodeBad(t *testing.T) {
	msg, _ := resKernel(false)(abi.RDMA_NLDEV_CMD_RES_QP_GET, syscall.NLM_F_DUMP, []nlAttr{{abi.RDMA_NLDEV_ATTR_DEV_INDEX, u32(0)}})
	for i := 0; i < len(msg[0]); i++ {
		_, _ = decodeResObjects(msg[0][:i], abi.RDMA_NLDEV_ATTR_RES_QP, abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY)
	}
	e := &nlEnc{}
	e.put(abi.RDMA_NLDEV_ATTR_RES_LQPN, []byte{1, 2})
	if _, err := decodeResObject(e.b); err == nil {
		t.Error("a 2-byte LQPN was accepted")
	}
	sum, _ := resKernel(true)(abi.RDMA_NLDEV_CMD_RES_GET, syscall.NLM_F_DUMP, nil)
	for i := 0; i < len(sum[0]); i++ {
		_, _ = decodeResSummary(sum[0][:i])
	}
	if _, err := decodeResSummary(sum[0][:8]); err == nil {
		t.Error("a summary without a name and table was accepted")
	}
	// An entry without its count is refused, and the error names it.
	noCount := &nlEnc{}
	noCount.nest(abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY, true, 0, func(en *nlEnc, _ int) {
		en.str(abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, "qp")
	})
	if _, err := decodeResSummaryTable(noCount.b); err == nil || !strings.Contains(err.Error(), "RES_SUMMARY_ENTRY without a name or a count") {
		t.Errorf("an entry without a count: %v, want an error naming RES_SUMMARY_ENTRY", err)
	}
}

// LinkAdd and LinkDelete send what rdma link add/delete send (link.c:
// NEWLINK with the name, type and netdev as strings; DELLINK with the
// device index), and pass the kernel's errno on.
func TestLinkRequests(t *testing.T) {
	var gotCmd uint16
	var got []nlAttr
	n := &Conn{exec: func(cmd, flags uint16, attrs []nlAttr) ([][]byte, error) {
		gotCmd, got = cmd, attrs
		if cmd == abi.RDMA_NLDEV_CMD_DELLINK {
			return nil, syscall.EINVAL
		}
		return nil, nil
	}}
	if err := n.LinkAdd("rxe7", "rxe", "veth0"); err != nil {
		t.Fatal(err)
	}
	if gotCmd != abi.RDMA_NLDEV_CMD_NEWLINK || len(got) != 3 || string(got[0].data) != "rxe7\x00" || got[1].typ != abi.RDMA_NLDEV_ATTR_LINK_TYPE ||
		string(got[1].data) != "rxe\x00" || got[2].typ != abi.RDMA_NLDEV_ATTR_NDEV_NAME || string(got[2].data) != "veth0\x00" {
		t.Errorf("NEWLINK %d %+v", gotCmd, got)
	}
	err := n.LinkDelete(3)
	if gotCmd != abi.RDMA_NLDEV_CMD_DELLINK || len(got) != 1 || got[0].typ != abi.RDMA_NLDEV_ATTR_DEV_INDEX || string(got[0].data) != string(u32(3)) {
		t.Errorf("DELLINK %d %+v", gotCmd, got)
	}
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("DELLINK error %v, want EINVAL", err)
	}
}

// decodePort reads fill_port_info's attributes: the InfiniBand ones only
// when sent, the netdev when there is one; a truncated reply is an error.
func TestDecodePort(t *testing.T) {
	e := &nlEnc{pad: true}
	e.u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 2)
	e.str(abi.RDMA_NLDEV_ATTR_DEV_NAME, "rxe1")
	e.u32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, 1)
	e.u8(abi.RDMA_NLDEV_ATTR_PORT_STATE, 4)
	e.u8(abi.RDMA_NLDEV_ATTR_PORT_PHYS_STATE, 5)
	e.u32(abi.RDMA_NLDEV_ATTR_NDEV_INDEX, 3)
	e.str(abi.RDMA_NLDEV_ATTR_NDEV_NAME, "veth1")
	p, err := decodePort(e.b)
	if err != nil || p.Index != 2 || p.Device != "rxe1" || p.Port != 1 || p.State != 4 || p.PhysState != 5 ||
		p.Netdev == nil || *p.Netdev != "veth1" || p.NetdevIndex == nil || *p.NetdevIndex != 3 || p.LID != nil || p.SubnetPrefix != nil {
		t.Fatalf("%+v %v", p, err)
	}
	ib := &nlEnc{}
	ib.u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 0)
	ib.str(abi.RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0")
	ib.u32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, 1)
	ib.u64(abi.RDMA_NLDEV_ATTR_SUBNET_PREFIX, 0xfe80000000000000, nlmsgHdrLen)
	ib.u32(abi.RDMA_NLDEV_ATTR_LID, 7)
	ib.u32(abi.RDMA_NLDEV_ATTR_SM_LID, 1)
	ib.u8(abi.RDMA_NLDEV_ATTR_LMC, 0)
	ib.u8(abi.RDMA_NLDEV_ATTR_PORT_STATE, 4)
	ib.u8(abi.RDMA_NLDEV_ATTR_PORT_PHYS_STATE, 5)
	p, err = decodePort(ib.b)
	if err != nil || p.SubnetPrefix == nil || *p.SubnetPrefix != 0xfe80000000000000 || *p.LID != 7 || *p.SMLID != 1 || p.LMC == nil || p.Netdev != nil {
		t.Fatalf("IB port: %+v %v", p, err)
	}
	// Every cut decodes without a panic; one before the state and
	// physical state are complete is an error (a cut between the optional
	// netdev attributes, or in the last one's padding, is a valid reply).
	mandatory := len(e.b) - 12 - 8 - 3 // the netdev name and index, the padding of the physical state
	for i := 0; i < len(e.b); i++ {
		if _, err := decodePort(e.b[:i]); err == nil && i < mandatory {
			t.Errorf("%d of %d bytes accepted", i, len(e.b))
		}
	}
}
