package rdmatool

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/rdmanl"
)

type fakeRes struct{}

func (fakeRes) Devices() ([]rdmanl.Device, error) {
	return []rdmanl.Device{{Index: 0, Name: "rxe0", NumPorts: 1}, {Index: 1, Name: "rxe1", NumPorts: 1}}, nil
}

func (fakeRes) ResourceSummaries() ([]rdmanl.ResourceSummary, error) {
	return []rdmanl.ResourceSummary{
		{Index: 0, Device: "rxe0", Counts: []rdmanl.NamedCounter{{Name: "pd", Value: 2}, {Name: "qp", Value: 3}}},
		{Index: 1, Device: "rxe1", Counts: []rdmanl.NamedCounter{{Name: "pd", Value: 1}, {Name: "qp", Value: 1}}},
	}, nil
}

func u32p(v uint32) *uint32 { return &v }
func strp(s string) *string { return &s }

func (fakeRes) Resources(kind rdmanl.ResourceKind, dev uint32) ([]rdmanl.ResourceObject, error) {
	if kind != rdmanl.ResQP || dev != 0 {
		return nil, nil
	}
	return []rdmanl.ResourceObject{
		{Index: 0, Device: "rxe0", Port: u32p(1), KernName: strp("ib_core"),
			U8:  map[uint16]uint8{abi.RDMA_NLDEV_ATTR_RES_TYPE: 1, abi.RDMA_NLDEV_ATTR_RES_STATE: 3},
			U32: map[uint16]uint32{abi.RDMA_NLDEV_ATTR_RES_LQPN: 1, abi.RDMA_NLDEV_ATTR_RES_SQ_PSN: 0}},
		{Index: 0, Device: "rxe0", PID: u32p(42),
			U8:  map[uint16]uint8{abi.RDMA_NLDEV_ATTR_RES_TYPE: 2, abi.RDMA_NLDEV_ATTR_RES_STATE: 0},
			U32: map[uint16]uint32{abi.RDMA_NLDEV_ATTR_RES_LQPN: 17, abi.RDMA_NLDEV_ATTR_RES_SQ_PSN: 5, abi.RDMA_NLDEV_ATTR_RES_PDN: 4}},
	}, nil
}

func withFakeRes(t *testing.T) *Env {
	return &Env{Resource: fakeRes{}, Comm: func(pid uint32) (string, bool) { return "a_very_long_process_name", pid == 42 }}
}

// The lines rdma 6.1 prints for the same netlink answers (the formats were
// compared with the real tool in TestVMResourceMatchesRdma).
func TestResourceText(t *testing.T) {
	env := withFakeRes(t)
	out, errs, code := runTool(env, "resource")
	if code != 0 || errs != "" || out != "0: rxe0: pd 2 qp 3 \n1: rxe1: pd 1 qp 1 \n" {
		t.Errorf("summary: %d %q %q", code, out, errs)
	}
	out, _, _ = runTool(env, "resource", "show", "rxe1")
	if out != "1: rxe1: pd 1 qp 1 \n" {
		t.Errorf("show rxe1: %q", out)
	}
	// The QP without a port comes first (rd_exec_link's port 0), the user
	// one's comm is cut to 17 characters, the kernel one's is bracketed.
	out, _, code = runTool(env, "resource", "show", "qp")
	want := "link rxe0/- lqpn 17 type RC state RESET sq-psn 5 pdn 4 pid 42 comm a_very_long_proce \n" +
		"link rxe0/1 lqpn 1 type GSI state RTS sq-psn 0 comm [ib_core] \n"
	if code != 0 || out != want {
		t.Errorf("show qp:\n%q\nwant\n%q", out, want)
	}
	if out, _, _ := runTool(env, "resource", "show", "qp", "link", "rxe0/1"); out != want[strings.Index(want, "\n")+1:] {
		t.Errorf("show qp link rxe0/1: %q", out)
	}
}

func TestResourceJSON(t *testing.T) {
	env := withFakeRes(t)
	out, _, code := runTool(env, "resource", "-j", "show", "qp")
	if code != 0 || !strings.HasPrefix(out, `[{"ifindex":0,"ifname":"rxe0","lqpn":17,`) || !strings.HasSuffix(out, "]\n") {
		t.Fatalf("%d %s", code, out)
	}
	var v []map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if len(v) != 2 || v[0]["comm"] != "a_very_long_process_name" || v[1]["comm"] != "ib_core" || v[1]["port"] != float64(1) || v[0]["type"] != "RC" {
		t.Errorf("%v", v)
	}
}

func TestResourceErrors(t *testing.T) {
	env := withFakeRes(t)
	if out, errs, code := runTool(env, "resource", "show", "qp", "link", "nosuch"); code != 1 || out != "" || errs != "Wrong device name\n" {
		t.Errorf("unknown device: %d %q %q", code, out, errs)
	}
	if out, errs, code := runTool(env, "resource", "-j", "show", "qp", "link", "nosuch"); code != 1 || out != "[]\n" || errs != "Wrong device name\n" {
		t.Errorf("-j unknown device: %d %q %q", code, out, errs)
	}
	// rdma 6.1 exits 0 after "Unknown parameter" (checked in the VM).
	if _, errs, code := runTool(env, "resource", "show", "bogus"); code != 0 || errs != "Unknown parameter 'bogus'.\n" {
		t.Errorf("bogus: %d %q", code, errs)
	}
	if _, errs, code := runTool(env, "resource", "--bogus"); code != 2 || !strings.Contains(errs, "Usage: purerdma resource") {
		t.Errorf("--bogus: %d %q", code, errs)
	}
}
