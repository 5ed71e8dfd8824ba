package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
)

func ptr[T any](v T) *T { return &v }

// fixture opens testdata/name. Inside the Soft-RoCE VM (the integration
// run executes the whole test binary there) the fixture tests skip: they
// ran on the host already, and reading testdata over 9p under TCG takes
// minutes.
func fixture(t testing.TB, name string) *FS {
	t.Helper()
	skipInVM(t)
	f, err := New(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func skipInVM(t testing.TB) {
	t.Helper()
	if os.Getenv("VMRUN_GUEST") == "1" {
		t.Skip("fixture test: runs on the host (make unit), not in the VM")
	}
}

var ignoreFS = cmpopts.IgnoreUnexported(CA{}, Port{})

func uverbs(n int, ca string, abi *int, dev *DevNumber) *CharDev {
	name := "uverbs" + string(rune('0'+n))
	return &CharDev{Kind: KindUverbs, Name: name, Index: n, Path: "/dev/infiniband/" + name, CA: ca, ABIVersion: abi, Dev: dev}
}

func madDev(k CharDevKind, n int, ca string, port int, dev *DevNumber) *CharDev {
	name := string(k) + string(rune('0'+n))
	return &CharDev{Kind: k, Name: name, Index: n, Path: "/dev/infiniband/" + name, CA: ca, Port: port, Dev: dev}
}

func pkeys(n int, first ...uint16) []uint16 {
	p := make([]uint16, n)
	copy(p, first)
	return p
}

func rxePort(ca string, n int) *Port {
	return &Port{
		CA: ca, Number: 1,
		State: rdma.PortActive, StateName: "ACTIVE", PhysState: rdma.PhysLinkUp, PhysStateName: "LinkUp",
		Rate: &Rate{Mbps: 10000, Width: 1, Speed: "FDR10", Raw: "10 Gb/sec (1X FDR10)"},
		LID:  ptr[uint32](0), LMC: ptr[uint8](0), SMLID: ptr[uint32](0), SMSL: ptr[uint8](0),
		CapMask: ptr[uint32](0x00010000), LinkLayer: rdma.LinkLayerEthernet, LinkLayerName: ptr("Ethernet"), PKeys: []uint16{0xffff},
		Umad: madDev(KindUmad, n, ca, 1, &DevNumber{231, uint32(n)}),
		ISSM: madDev(KindISSM, n, ca, 1, &DevNumber{231, uint32(64 + n)}),
	}
}

func rxeCA(n int, guid rdma.GUID, parent string) *CA {
	name := "rxe" + string(rune('0'+n))
	return &CA{
		Name: name, NodeType: rdma.NodeCA, NodeTypeName: "CA", NodeGUID: guid, SysImageGUID: guid,
		FWVersion: ptr(""), NodeDesc: ptr("rxe"), Parent: ptr(parent),
		Ports: []*Port{rxePort(name, n)},
		Verbs: uverbs(n, name, ptr(2), &DevNumber{231, uint32(192 + n)}),
	}
}

func mlx5CA(guid rdma.GUID, fw, hcaType, board, desc string, port *Port, issm bool) *CA {
	port.Umad = madDev(KindUmad, 0, "mlx5_0", 1, &DevNumber{231, 0})
	if issm {
		port.ISSM = madDev(KindISSM, 0, "mlx5_0", 1, &DevNumber{231, 64})
	}
	return &CA{
		Name: "mlx5_0", NodeType: rdma.NodeCA, NodeTypeName: "CA", NodeGUID: guid, SysImageGUID: guid,
		FWVersion: ptr(fw), HCAType: ptr(hcaType), HWRev: ptr("0"), BoardID: ptr(board), NodeDesc: ptr(desc),
		Ports: []*Port{port},
		Verbs: uverbs(0, "mlx5_0", ptr(1), &DevNumber{231, 192}),
	}
}

// wantCAs is what CAs returns for each fixture built from the documented
// formats and the rxe capture.
var wantCAs = map[string][]*CA{
	"rxe-6.1": {
		rxeCA(0, 0xacade8fffe375f42, "veth0"),
		rxeCA(1, 0xacdf59fffef0895d, "veth1"),
	},
	"mlx5-ib": {mlx5CA(0x0c42a1030016054e, "20.31.1014", "MT4123", "MT_0000000223", "node01 mlx5_0", &Port{
		CA: "mlx5_0", Number: 1,
		State: rdma.PortActive, StateName: "ACTIVE", PhysState: rdma.PhysLinkUp, PhysStateName: "LinkUp",
		Rate: &Rate{Mbps: 200000, Width: 4, Speed: "HDR", Raw: "200 Gb/sec (4X HDR)"},
		LID:  ptr[uint32](0x1a), LMC: ptr[uint8](0), SMLID: ptr[uint32](1), SMSL: ptr[uint8](0),
		CapMask: ptr[uint32](0xa651e848), LinkLayer: rdma.LinkLayerInfiniBand, LinkLayerName: ptr("InfiniBand"), PKeys: pkeys(128, 0xffff, 0x8001),
	}, true)},
	"mlx5-eth": {mlx5CA(0xb8599f0300d42a10, "22.36.1010", "MT4125", "MT_0000000359", "node02 mlx5_0", &Port{
		CA: "mlx5_0", Number: 1,
		State: rdma.PortActive, StateName: "ACTIVE", PhysState: rdma.PhysLinkUp, PhysStateName: "LinkUp",
		Rate: &Rate{Mbps: 100000, Width: 4, Speed: "EDR", Raw: "100 Gb/sec (4X EDR)"},
		LID:  ptr[uint32](0), LMC: ptr[uint8](0), SMLID: ptr[uint32](0), SMSL: ptr[uint8](0),
		CapMask: ptr[uint32](0x04010000), LinkLayer: rdma.LinkLayerEthernet, LinkLayerName: ptr("Ethernet"), PKeys: []uint16{0xffff},
	}, false)},
	"hfi1": {{
		Name: "hfi1_0", NodeType: rdma.NodeCA, NodeTypeName: "CA", NodeGUID: 0x001175010179e2d5, SysImageGUID: 0x001175010179e2d5,
		FWVersion: ptr("1.27.0"), HWRev: ptr("11"), NodeDesc: ptr("node03 hfi1_0"),
		BoardID: ptr("Intel Omni-Path Host Fabric Interface Adapter 100 Series"),
		Ports: []*Port{{
			CA: "hfi1_0", Number: 1,
			State: rdma.PortActive, StateName: "ACTIVE", PhysState: rdma.PhysLinkUp, PhysStateName: "LinkUp",
			Rate: &Rate{Mbps: 100000, Width: 4, Speed: "EDR", Raw: "100 Gb/sec (4X EDR)"},
			LID:  ptr[uint32](1), LMC: ptr[uint8](0), SMLID: ptr[uint32](1), SMSL: ptr[uint8](0),
			CapMask: ptr[uint32](0x00490020), LinkLayer: rdma.LinkLayerInfiniBand, LinkLayerName: ptr("InfiniBand"), PKeys: pkeys(16, 0xffff, 0x7fff),
			Umad: madDev(KindUmad, 0, "hfi1_0", 1, nil),
			ISSM: madDev(KindISSM, 0, "hfi1_0", 1, nil),
		}},
		Verbs: uverbs(0, "hfi1_0", nil, nil),
	}},
	// A switch: its management port 0 is its only port.
	"ib-switch": {{
		Name: "switch0", NodeType: rdma.NodeSwitch, NodeTypeName: "switch", NodeGUID: 0x0c42a10300aabb00, SysImageGUID: 0x0c42a10300aabb00,
		FWVersion: ptr("27.2010.1202"), HCAType: ptr("MT54000"), HWRev: ptr("0"), BoardID: ptr("MT_0000000063"),
		NodeDesc: ptr("leaf01 switch0"),
		Ports: []*Port{{
			CA: "switch0", Number: 0,
			State: rdma.PortActive, StateName: "ACTIVE", PhysState: rdma.PhysLinkUp, PhysStateName: "LinkUp",
			Rate: &Rate{Mbps: 100000, Width: 4, Speed: "EDR", Raw: "100 Gb/sec (4X EDR)"},
			LID:  ptr[uint32](2), LMC: ptr[uint8](0), SMLID: ptr[uint32](1), SMSL: ptr[uint8](0),
			CapMask: ptr[uint32](0x0250084a), LinkLayer: rdma.LinkLayerInfiniBand, LinkLayerName: ptr("InfiniBand"), PKeys: []uint16{0xffff},
			Umad: madDev(KindUmad, 0, "switch0", 0, &DevNumber{231, 0}),
			ISSM: madDev(KindISSM, 0, "switch0", 0, &DevNumber{231, 64}),
		}},
		Verbs: uverbs(0, "switch0", ptr(1), &DevNumber{231, 192}),
	}},
	"iwarp-old": {{
		Name: "cxgb4_0", NodeType: rdma.NodeRNIC, NodeTypeName: "RNIC", NodeGUID: 0x000743a1b2c00000, SysImageGUID: 0x000743a1b2c00000,
		FWVersion: ptr("1.16.63.0"), HCAType: ptr("cxgb4"), HWRev: ptr("0"), BoardID: ptr("1425.5401"), NodeDesc: ptr("cxgb4_0"),
		Ports: []*Port{{
			CA: "cxgb4_0", Number: 1,
			State: rdma.PortActive, StateName: "ACTIVE", PhysState: rdma.PhysLinkUp, PhysStateName: "LinkUp",
			Rate: &Rate{Mbps: 20000, Width: 4, Speed: "DDR", Raw: "20 Gb/sec (4X DDR)"},
			LID:  ptr[uint32](0), LMC: ptr[uint8](0), SMLID: ptr[uint32](0), SMSL: ptr[uint8](0),
			CapMask: ptr[uint32](0x00010000), LinkLayer: rdma.LinkLayerEthernet, LinkLayerName: ptr("Ethernet"),
		}, {
			CA: "cxgb4_0", Number: 2,
			State: rdma.PortDown, StateName: "DOWN", PhysState: rdma.PhysDisabled, PhysStateName: "Disabled",
			LID: ptr[uint32](0), LMC: ptr[uint8](0), SMLID: ptr[uint32](0), SMSL: ptr[uint8](0),
			CapMask: ptr[uint32](0x00010000), LinkLayer: rdma.LinkLayerEthernet, LinkLayerName: ptr("Ethernet"),
		}},
		Verbs: uverbs(0, "cxgb4_0", ptr(3), nil),
	}},
}

func TestCAs(t *testing.T) {
	for name, want := range wantCAs {
		t.Run(name, func(t *testing.T) {
			f := fixture(t, name)
			got, err := f.CAs()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got, ignoreFS); d != "" {
				t.Errorf("CAs() mismatch (-want +got):\n%s", d)
			}
			for _, w := range want {
				ca, err := f.CA(w.Name)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(w, ca, ignoreFS); d != "" {
					t.Errorf("CA(%q) mismatch (-want +got):\n%s", w.Name, d)
				}
				if want := w.Ports[len(w.Ports)-1].Number; ca.NumPorts() != want {
					t.Errorf("NumPorts = %d, want %d (the highest port number)", ca.NumPorts(), want)
				}
				for _, wp := range w.Ports {
					p, err := f.Port(w.Name, wp.Number)
					if err != nil {
						t.Fatal(err)
					}
					if d := cmp.Diff(wp, p, ignoreFS); d != "" {
						t.Errorf("Port(%q, %d) mismatch (-want +got):\n%s", w.Name, wp.Number, d)
					}
					if ca.Port(wp.Number) == nil {
						t.Errorf("CA.Port(%d) = nil", wp.Number)
					}
				}
			}
		})
	}
}

// TestAbsentIsNotZero checks, on fixtures where files are missing, that
// the values are nil rather than zero, and that zeros that were read are
// not nil.
func TestAbsentIsNotZero(t *testing.T) {
	rxe, err := fixture(t, "rxe-6.1").CA("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	if rxe.HCAType != nil || rxe.HWRev != nil || rxe.BoardID != nil {
		t.Errorf("rxe has no hca_type, hw_rev, board_id; got %v %v %v", rxe.HCAType, rxe.HWRev, rxe.BoardID)
	}
	if rxe.FWVersion == nil || *rxe.FWVersion != "" {
		t.Errorf("rxe's fw_ver exists and is empty; got %v", rxe.FWVersion)
	}
	p := rxe.Ports[0]
	if p.LID == nil || *p.LID != 0 || p.SMSL == nil || *p.SMSL != 0 {
		t.Errorf("rxe's lid and sm_sl read 0: got %v %v", p.LID, p.SMSL)
	}
	old, err := fixture(t, "iwarp-old").CA("cxgb4_0")
	if err != nil {
		t.Fatal(err)
	}
	if p := old.Port(2); p.Rate != nil {
		t.Errorf("port without a rate file: Rate = %+v, want nil", *p.Rate)
	}
	if old.Ports[0].PKeys != nil {
		t.Errorf("port without pkeys/: PKeys = %v, want nil", old.Ports[0].PKeys)
	}
	if old.Ports[0].Umad != nil || old.Ports[0].ISSM != nil {
		t.Errorf("no infiniband_mad class: Umad, ISSM = %v, %v, want nil", old.Ports[0].Umad, old.Ports[0].ISSM)
	}
	if ll := old.Ports[0].LinkLayerName; ll == nil || *ll != "Ethernet" || old.Ports[0].LinkLayer != rdma.LinkLayerEthernet {
		t.Errorf("LinkLayerName = %v, LinkLayer %v", ll, old.Ports[0].LinkLayer)
	}
	if r := old.Port(2).Rate; r != nil {
		t.Errorf("Rate without a rate file = %+v", r)
	}
	// counters/ with only "N/A (no PMA)": an empty map, not zeros.
	c, err := old.Ports[0].Counters()
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != 0 || c == nil {
		t.Errorf("all-N/A counters = %#v, want an empty map", c)
	}
	if _, ok := c.XmitOctets(); ok {
		t.Error("XmitOctets of an N/A counter reported ok")
	}
	hfi, err := fixture(t, "hfi1").CA("hfi1_0")
	if err != nil {
		t.Fatal(err)
	}
	if hfi.Verbs.ABIVersion != nil || hfi.Verbs.Dev != nil {
		t.Errorf("uverbs0 without abi_version and dev: %+v", hfi.Verbs)
	}
}

// TestToolOutputs checks the rxe capture against what rdma-core's tools
// printed on the same VM (go run ./integration/vmrun -- ibstat, ibstatus).
func TestToolOutputs(t *testing.T) {
	f := fixture(t, "rxe-6.1")
	for _, tc := range []struct {
		ca, nodeGUID, portGUID, defaultGID, gid0, gid1 string
		stats                                          string
	}{
		{"rxe0", "0xacade8fffe375f42", "0xacade8fffe375f42", "fe80:0000:0000:0000:acad:e8ff:fe37:5f42",
			"fe80::acad:e8ff:fe37:5f42", "::ffff:10.77.0.1",
			"sent_pkts 25019 rcvd_pkts 25019 duplicate_request 10 out_of_seq_request 0 rcvd_rnr_err 0 send_rnr_err 0 rcvd_seq_err 0 ack_deferred 1 retry_exceeded_err 0 retry_rnr_exceeded_err 0 completer_retry_err 3 send_err 0 link_downed 0 rdma_sends 5000 rdma_recvs 5000"},
		{"rxe1", "0xacdf59fffef0895d", "0xacdf59fffef0895d", "fe80:0000:0000:0000:acdf:59ff:fef0:895d",
			"fe80::acdf:59ff:fef0:895d", "::ffff:10.77.0.2",
			"sent_pkts 15011 rcvd_pkts 15011 duplicate_request 5 out_of_seq_request 0 rcvd_rnr_err 0 send_rnr_err 0 rcvd_seq_err 0 ack_deferred 1 retry_exceeded_err 0 retry_rnr_exceeded_err 0 completer_retry_err 2 send_err 0 link_downed 0 rdma_sends 3000 rdma_recvs 3000"},
	} {
		ca, err := f.CA(tc.ca)
		if err != nil {
			t.Fatal(err)
		}
		p := ca.Ports[0]
		// ibstat
		if got := "0x" + strings.ReplaceAll(ca.NodeGUID.String(), ":", ""); got != tc.nodeGUID {
			t.Errorf("%s Node GUID %s, ibstat printed %s", tc.ca, got, tc.nodeGUID)
		}
		if p.Rate == nil || p.Rate.Mbps/1000 != 10 || p.Rate.Speed != "FDR10" {
			t.Errorf(`%s rate %+v, ibstat printed "Rate: 10 (FDR10)"`, tc.ca, p.Rate)
		}
		g0, err := p.GID(0)
		if err != nil {
			t.Fatal(err)
		}
		if got := "0x" + strings.TrimLeft(strings.ReplaceAll(rdma.GUID(g0.GID.InterfaceID()).String(), ":", ""), ""); got != tc.portGUID {
			t.Errorf("%s Port GUID %s, ibstat printed %s", tc.ca, got, tc.portGUID)
		}
		if v, err := p.GIDValue(0); err != nil || v != g0.GID {
			t.Errorf("%s GIDValue(0) = %v, %v; GID(0) has %v", tc.ca, v, err, g0.GID)
		}
		if _, err := p.GIDValue(5000); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s GIDValue(5000) = %v, want ErrNotExist", tc.ca, err)
		}
		// ibstatus
		if g0.GID.Hex() != tc.defaultGID {
			t.Errorf("%s default gid %s, ibstatus printed %s", tc.ca, g0.GID, tc.defaultGID)
		}
		if p.Rate.Raw != "10 Gb/sec (1X FDR10)" || p.StateName != "ACTIVE" || p.PhysStateName != "LinkUp" {
			t.Errorf("%s: %q %q %q", tc.ca, p.Rate.Raw, p.StateName, p.PhysStateName)
		}
		// ibv_devinfo -v
		gids, err := p.GIDs()
		if err != nil {
			t.Fatal(err)
		}
		if len(gids) != 2 || gids[0].GID.Addr().String() != tc.gid0 || gids[1].GID.Addr().String() != tc.gid1 ||
			*gids[0].Type != rdma.GIDTypeRoCEv2 || *gids[1].Type != rdma.GIDTypeRoCEv2 {
			t.Errorf("%s GIDs %+v, ibv_devinfo printed %s and %s, RoCE v2", tc.ca, gids, tc.gid0, tc.gid1)
		}
		// rdma statistic show (after the pingpongs)
		hw, err := p.HwCounters()
		if err != nil {
			t.Fatal(err)
		}
		fields := strings.Fields(tc.stats)
		want := HwCounters{}
		for i := 0; i < len(fields); i += 2 {
			v, _ := parseCounter([]byte(fields[i+1]))
			want[fields[i]] = v
		}
		if d := cmp.Diff(want, hw); d != "" {
			t.Errorf("%s hw counters differ from rdma statistic show (-want +got):\n%s", tc.ca, d)
		}
	}
}

func TestGIDs(t *testing.T) {
	for _, tc := range []struct {
		fixture, ca string
		port        int
		want        []GIDEntry
	}{
		{"rxe-6.1", "rxe1", 1, []GIDEntry{
			{0, mustGID("fe80:0000:0000:0000:acdf:59ff:fef0:895d"), ptr(rdma.GIDTypeRoCEv2), ptr("veth1")},
			{1, mustGID("0000:0000:0000:0000:0000:ffff:0a4d:0002"), ptr(rdma.GIDTypeRoCEv2), ptr("veth1")},
		}},
		{"mlx5-ib", "mlx5_0", 1, []GIDEntry{
			{0, mustGID("fe80:0000:0000:0000:0c42:a103:0016:054e"), ptr(rdma.GIDTypeIB), nil},
		}},
		{"mlx5-eth", "mlx5_0", 1, []GIDEntry{
			{0, mustGID("fe80:0000:0000:0000:ba59:9fff:fed4:2a10"), ptr(rdma.GIDTypeRoCEv1), ptr("enp94s0f0np0")},
			{1, mustGID("fe80:0000:0000:0000:ba59:9fff:fed4:2a10"), ptr(rdma.GIDTypeRoCEv2), ptr("enp94s0f0np0")},
			{2, mustGID("0000:0000:0000:0000:0000:ffff:c0a8:0a02"), ptr(rdma.GIDTypeRoCEv1), ptr("enp94s0f0np0")},
			{3, mustGID("0000:0000:0000:0000:0000:ffff:c0a8:0a02"), ptr(rdma.GIDTypeRoCEv2), ptr("enp94s0f0np0")},
		}},
		{"hfi1", "hfi1_0", 1, []GIDEntry{
			{0, mustGID("fe80:0000:0000:0000:0011:7501:0179:e2d5"), ptr(rdma.GIDTypeIB), nil},
		}},
		{"iwarp-old", "cxgb4_0", 2, []GIDEntry{
			{0, mustGID("0007:43a1:b2c0:0001:0000:0000:0000:0000"), nil, nil},
		}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			p, err := fixture(t, tc.fixture).Port(tc.ca, tc.port)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.GIDs()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("GIDs mismatch (-want +got):\n%s", d)
			}
			// An empty slot: zero GID, no attributes, no error.
			if tc.fixture != "iwarp-old" {
				e, err := p.GID(len(tc.want))
				if err != nil || !e.GID.IsZero() || e.Type != nil || e.NetDev != nil {
					t.Errorf("empty slot %d: %+v, %v", len(tc.want), e, err)
				}
			}
			if _, err := p.GID(5000); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("GID(5000) error %v, want os.ErrNotExist", err)
			}
		})
	}
}

// TestGIDTypeLinkLayer: the kernel writes "IB/RoCE v1" for InfiniBand and
// RoCE v1 GIDs alike; the port's link layer decides, as libibverbs does
// (an Ethernet port's is RoCE v1; an InfiniBand port's, or one without
// link_layer, IB). Text that is neither kernel form is a *ParseError.
func TestGIDTypeLinkLayer(t *testing.T) {
	const port = "class/infiniband/mlx5_0/ports/1/"
	for _, tc := range []struct {
		name      string
		linkLayer string // "" removes link_layer
		types0    string
		want      rdma.GIDType
		bad       bool
	}{
		{"Ethernet", "Ethernet\n", "IB/RoCE v1\n", rdma.GIDTypeRoCEv1, false},
		{"InfiniBand", "InfiniBand\n", "IB/RoCE v1\n", rdma.GIDTypeIB, false},
		{"Unknown", "Unknown\n", "IB/RoCE v1\n", rdma.GIDTypeIB, false},
		{"no link_layer", "", "IB/RoCE v1\n", rdma.GIDTypeIB, false},
		{"RoCE v2 on InfiniBand", "InfiniBand\n", "RoCE v2\n", rdma.GIDTypeRoCEv2, false},
		{"unknown text", "Ethernet\n", "RoCE v3\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := mapTree(t, "testdata/mlx5-eth")
			if tc.linkLayer == "" {
				delete(tree, port+"link_layer")
			} else {
				tree[port+"link_layer"] = &fstest.MapFile{Data: []byte(tc.linkLayer)}
			}
			tree[port+"gid_attrs/types/0"] = &fstest.MapFile{Data: []byte(tc.types0)}
			p, err := NewFS(tree).Port("mlx5_0", 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, read := range []func() (GIDEntry, error){
				func() (GIDEntry, error) { return p.GID(0) },
				func() (GIDEntry, error) {
					gids, err := p.GIDs()
					if err != nil {
						return GIDEntry{}, err
					}
					return gids[0], nil
				},
			} {
				e, err := read()
				if tc.bad {
					var pe *ParseError
					if !errors.As(err, &pe) || !strings.Contains(err.Error(), "gid_attrs/types/0") {
						t.Errorf("GID 0 = %+v, %v; want a *ParseError naming gid_attrs/types/0", e, err)
					}
					continue
				}
				if err != nil || e.Type == nil || *e.Type != tc.want {
					t.Errorf("GID 0 = %+v, %v; want type %v", e, err, tc.want)
				}
			}
		})
	}
}

func mustGID(s string) rdma.GID {
	g, err := parseGID(s)
	if err != nil {
		panic(err)
	}
	return g
}

func TestCounters(t *testing.T) {
	for _, tc := range []struct {
		fixture, ca      string
		n                int
		xmitRaw, rcvRaw  uint64
		wantNotSupported bool
	}{
		{"mlx5-ib", "mlx5_0", 21, 1234567890123, 9876543210, false},
		{"mlx5-eth", "mlx5_0", 21, 250000000000, 125000000000, false},
		{"hfi1", "hfi1_0", 21, 77777777, 66666666, false},
		{"rxe-6.1", "rxe0", 0, 0, 0, true},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			p, err := fixture(t, tc.fixture).Port(tc.ca, 1)
			if err != nil {
				t.Fatal(err)
			}
			c, err := p.Counters()
			if tc.wantNotSupported {
				if !errors.Is(err, ErrNotSupported) || c != nil {
					t.Fatalf("Counters() = %v, %v; want an error matching ErrNotSupported", c, err)
				}
				if !strings.Contains(err.Error(), "no PMA") {
					t.Errorf("message %q does not say why", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(c) != tc.n || c[CounterXmitData] != tc.xmitRaw || c[CounterRcvData] != tc.rcvRaw {
				t.Errorf("Counters() = %v", c)
			}
			if v, ok := c.XmitOctets(); !ok || v != 4*tc.xmitRaw {
				t.Errorf("XmitOctets = %d, %v; want %d", v, ok, 4*tc.xmitRaw)
			}
			if v, ok := c.RcvOctets(); !ok || v != 4*tc.rcvRaw {
				t.Errorf("RcvOctets = %d, %v; want %d", v, ok, 4*tc.rcvRaw)
			}
			if c["link_downed"] != 1 || c["multicast_rcv_packets"] != 7 {
				t.Errorf("link_downed %d multicast_rcv_packets %d", c["link_downed"], c["multicast_rcv_packets"])
			}
		})
	}
	if got := DataOctets(1 << 62); got != 1<<64-1 {
		t.Errorf("DataOctets(2^62) = %d, want saturation", got)
	}
}

func TestHwCounters(t *testing.T) {
	for _, tc := range []struct {
		fixture, ca string
		n           int
		some        map[string]uint64
		lifespan    time.Duration
	}{
		{"rxe-6.1", "rxe0", 15, map[string]uint64{"rcvd_pkts": 25019, "rdma_sends": 5000, "ack_deferred": 1}, 12 * time.Millisecond},
		{"mlx5-ib", "mlx5_0", 19, map[string]uint64{"rx_write_requests": 4242, "out_of_buffer": 3}, 10 * time.Millisecond},
		{"mlx5-eth", "mlx5_0", 28, map[string]uint64{"np_cnp_sent": 1<<64 - 1, "rp_cnp_handled": 0}, 10 * time.Millisecond},
		{"hfi1", "hfi1_0", 11, map[string]uint64{"TxPkt": 123456, "TxWords": 9876543}, 10 * time.Millisecond},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			p, err := fixture(t, tc.fixture).Port(tc.ca, 1)
			if err != nil {
				t.Fatal(err)
			}
			hw, err := p.HwCounters()
			if err != nil {
				t.Fatal(err)
			}
			if len(hw) != tc.n {
				t.Errorf("%d counters, want %d: %v", len(hw), tc.n, hw)
			}
			if _, ok := hw[lifespanFile]; ok {
				t.Error("lifespan is a setting, not a counter")
			}
			for k, v := range tc.some {
				if got, ok := hw[k]; !ok || got != v {
					t.Errorf("%s = %d, %v; want %d", k, got, ok, v)
				}
			}
			ls, err := p.HwCountersLifespan()
			if err != nil || ls != tc.lifespan {
				t.Errorf("lifespan %v, %v; want %v", ls, err, tc.lifespan)
			}
			// The FS forms read the same without the port's attributes.
			f := fixture(t, tc.fixture)
			if ports, err := f.PortNumbers(tc.ca); err != nil || !slices.Equal(ports, []int{1}) {
				t.Errorf("PortNumbers = %v, %v; want [1]", ports, err)
			}
			if ls, err := f.HwCountersLifespan(tc.ca, 1); err != nil || ls != tc.lifespan {
				t.Errorf("FS.HwCountersLifespan %v, %v; want %v", ls, err, tc.lifespan)
			}
			fsSet, err := f.OpenHwCounters(tc.ca, 1)
			if err != nil {
				t.Fatal(err)
			}
			fsVals := map[string]uint64{}
			if err := fsSet.Read(fsVals); err != nil {
				t.Fatal(err)
			}
			fsSet.Close()
			if d := cmp.Diff(map[string]uint64(hw), fsVals); d != "" {
				t.Errorf("FS.OpenHwCounters differs from HwCounters (-want +got):\n%s", d)
			}

			s, err := p.OpenHwCounters()
			if err != nil {
				t.Fatal(err)
			}
			m := map[string]uint64{}
			if err := s.Read(m); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(map[string]uint64(hw), m); d != "" {
				t.Errorf("HwCounterSet.Read differs from HwCounters (-want +got):\n%s", d)
			}
			vals := make([]uint64, len(s.Names()))
			if err := s.ReadValues(vals); err != nil {
				t.Fatal(err)
			}
			for i, n := range s.Names() {
				if vals[i] != hw[n] {
					t.Errorf("ReadValues[%d] (%s) = %d, want %d", i, n, vals[i], hw[n])
				}
			}
			if err := s.ReadValues(vals[:0]); err == nil && len(vals) > 0 {
				t.Error("ReadValues into a short slice succeeded")
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if err := s.Read(m); !errors.Is(err, fs.ErrClosed) {
				t.Errorf("Read after Close: %v, want fs.ErrClosed", err)
			}
		})
	}

	// Device-wide counters (hfi1 only).
	hfi, err := fixture(t, "hfi1").CA("hfi1_0")
	if err != nil {
		t.Fatal(err)
	}
	dev, err := hfi.HwCounters()
	if err != nil {
		t.Fatal(err)
	}
	if len(dev) != 15 || dev["DRIVER_KernIntr"] != 987654 || dev["DRIVER_CtxtsOpen"] != 4 {
		t.Errorf("hfi1 device hw_counters = %v", dev)
	}
	mlx, err := fixture(t, "mlx5-ib").CA("mlx5_0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mlx.HwCounters(); !errors.Is(err, ErrNotSupported) {
		t.Errorf("mlx5 device hw_counters: %v, want ErrNotSupported", err)
	}

	// No hw_counters/ at all.
	old, err := fixture(t, "iwarp-old").Port("cxgb4_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.HwCounters(); !errors.Is(err, ErrNotSupported) {
		t.Errorf("HwCounters without hw_counters/: %v, want ErrNotSupported", err)
	}
	if _, err := old.OpenHwCounters(); !errors.Is(err, ErrNotSupported) {
		t.Errorf("OpenHwCounters without hw_counters/: %v, want ErrNotSupported", err)
	}
	if _, err := old.HwCountersLifespan(); !errors.Is(err, ErrNotSupported) {
		t.Errorf("HwCountersLifespan without hw_counters/: %v, want ErrNotSupported", err)
	}
	iw := fixture(t, "iwarp-old")
	if _, err := iw.OpenHwCounters("cxgb4_0", 1); !errors.Is(err, ErrNotSupported) {
		t.Errorf("FS.OpenHwCounters without hw_counters/: %v, want ErrNotSupported", err)
	}
	if _, err := iw.HwCountersLifespan("cxgb4_0", 1); !errors.Is(err, ErrNotSupported) {
		t.Errorf("FS.HwCountersLifespan without hw_counters/: %v, want ErrNotSupported", err)
	}
	if _, err := iw.OpenCounters("cxgb4_0", 9); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("FS.OpenCounters of a port that is not there: %v, want os.ErrNotExist", err)
	}
	for _, name := range []string{"nosuch", "", "..", "a/b"} {
		if _, err := iw.PortNumbers(name); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("PortNumbers(%q): %v, want os.ErrNotExist", name, err)
		}
		if _, err := iw.OpenHwCounters(name, 1); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("FS.OpenHwCounters(%q): %v, want os.ErrNotExist", name, err)
		}
		if _, err := iw.HwCountersLifespan(name, 1); err == nil {
			t.Errorf("FS.HwCountersLifespan(%q) succeeded", name)
		}
		if _, err := iw.OpenCounters(name, 1); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("FS.OpenCounters(%q): %v, want os.ErrNotExist", name, err)
		}
	}
}

// TestHwCountersSkipsDirectories: a directory in hw_counters/ is not a
// counter (the listing's d_type tells, without a stat), and a port
// directory's files are found without reading its attributes; a lifespan
// file that is missing where the directory exists is os.ErrNotExist.
func TestHwCountersSkipsDirectories(t *testing.T) {
	root := t.TempDir()
	hw := filepath.Join(root, "class/infiniband/dev0/ports/2/hw_counters")
	if err := os.MkdirAll(filepath.Join(hw, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "class/infiniband/dev0/ports/10"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"b_pkts": "7\n", "a_errs": "3\n"} {
		if err := os.WriteFile(filepath.Join(hw, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	if ports, err := f.PortNumbers("dev0"); err != nil || !slices.Equal(ports, []int{2, 10}) {
		t.Errorf("PortNumbers = %v, %v; want [2 10] (in numeric order)", ports, err)
	}
	s, err := f.OpenHwCounters("dev0", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !slices.Equal(s.Names(), []string{"a_errs", "b_pkts"}) {
		t.Errorf("names %v, want [a_errs b_pkts]", s.Names())
	}
	vals := make([]uint64, 2)
	if err := s.ReadValues(vals); err != nil || vals[0] != 3 || vals[1] != 7 {
		t.Errorf("values %v, %v", vals, err)
	}
	if _, err := f.HwCountersLifespan("dev0", 2); !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrNotSupported) {
		t.Errorf("lifespan without its file: %v, want os.ErrNotExist only", err)
	}
	if _, err := f.HwCountersLifespan("dev0", 10); !errors.Is(err, ErrNotSupported) {
		t.Errorf("lifespan without hw_counters/: %v, want ErrNotSupported", err)
	}
	if _, err := f.OpenCounters("dev0", 10); !errors.Is(err, ErrNotSupported) {
		t.Errorf("FS.OpenCounters without counters/: %v, want ErrNotSupported", err)
	}
}

// FS.OpenCounters opens a port's counters/ (the PMA's) by device name and
// port number, as Port.OpenCounters does from a read port.
func TestFSOpenCounters(t *testing.T) {
	f := fixture(t, "mlx5-ib")
	p, err := f.Port("mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.OpenCounters("mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	vals := make([]uint64, len(s.Names()))
	ok := make([]bool, len(s.Names()))
	if err := s.ReadValues(vals, ok); err != nil {
		t.Fatal(err)
	}
	got := Counters{}
	for i, name := range s.Names() {
		if ok[i] {
			got[name] = vals[i]
		}
	}
	if len(got) == 0 || !maps.Equal(got, want) {
		t.Errorf("FS.OpenCounters read %v, Port.Counters %v", got, want)
	}
}

func TestCharDevsAndABI(t *testing.T) {
	f := fixture(t, "rxe-6.1")
	devs, err := f.CharDevs()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range devs {
		names = append(names, d.Name+"="+d.CA+"/"+string(rune('0'+d.Port))+"@"+d.Dev.String())
	}
	want := []string{"uverbs0=rxe0/0@231:192", "uverbs1=rxe1/0@231:193", "umad0=rxe0/1@231:0", "umad1=rxe1/1@231:1", "issm0=rxe0/1@231:64", "issm1=rxe1/1@231:65"}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("CharDevs (-want +got):\n%s", d)
	}
	// FindCharDev finds each of them by kind, device and port, as
	// CharDevs lists it.
	for _, d := range devs {
		got, err := f.FindCharDev(d.Kind, d.CA, d.Port)
		if err != nil || !cmp.Equal(got, d) {
			t.Errorf("FindCharDev(%s, %s, %d) = %+v, %v; want %+v", d.Kind, d.CA, d.Port, got, err, d)
		}
	}
	if _, err := f.FindCharDev(KindUmad, "rxe0", 2); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("FindCharDev of a port without umad: %v, want os.ErrNotExist", err)
	}
	if _, err := f.FindCharDev("tty", "rxe0", 1); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("FindCharDev of kind tty: %v, want EINVAL", err)
	}
	if v, err := f.VerbsABIVersion(); err != nil || v != 6 {
		t.Errorf("VerbsABIVersion = %d, %v", v, err)
	}
	if v, err := f.MadABIVersion(); err != nil || v != 5 {
		t.Errorf("MadABIVersion = %d, %v", v, err)
	}
	old := fixture(t, "iwarp-old")
	if _, err := old.MadABIVersion(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("MadABIVersion without ib_umad: %v, want os.ErrNotExist", err)
	}
	// Nothing at all: an empty directory as root.
	empty, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if devs, err := empty.CharDevs(); err != nil || len(devs) != 0 {
		t.Errorf("CharDevs on an empty tree = %v, %v", devs, err)
	}
	if _, err := empty.CANames(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CANames without class/infiniband: %v, want os.ErrNotExist", err)
	}
	if _, err := empty.VerbsABIVersion(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("VerbsABIVersion without ib_uverbs: %v, want os.ErrNotExist", err)
	}
}

func TestMissing(t *testing.T) {
	f := fixture(t, "rxe-6.1")
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"CA nope", func() error { _, err := f.CA("nope"); return err }()},
		{"CA ..", func() error { _, err := f.CA(".."); return err }()},
		{"CA ../../etc", func() error { _, err := f.CA("../../etc"); return err }()},
		{"CA empty", func() error { _, err := f.CA(""); return err }()},
		{"Port nope/1", func() error { _, err := f.Port("nope", 1); return err }()},
		{"Port rxe0/2", func() error { _, err := f.Port("rxe0", 2); return err }()},
		{"Port ../x/1", func() error { _, err := f.Port("../x", 1); return err }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, os.ErrNotExist) {
				t.Fatalf("error %v does not match os.ErrNotExist", tc.err)
			}
			var e *Error
			if !errors.As(tc.err, &e) || (e.Device == "" && tc.name != "CA empty") {
				t.Errorf("error %v is not an *Error naming the device", tc.err)
			}
			if !errors.Is(tc.err, syscall.ENOENT) {
				t.Errorf("error %v does not carry ENOENT", tc.err)
			}
		})
	}
	if _, err := New(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("New(missing) = %v, want os.ErrNotExist", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(file); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("New(file) = %v, want ENOTDIR", err)
	}
}

// TestBroken reads every CA of testdata/broken, each broken in one way, and
// checks the error: which file, what was expected, and how errors.Is sees
// it. The unreadable files there work as root too: a directory where a file
// is expected (EISDIR) and a symbolic link to itself (ELOOP).
func TestBroken(t *testing.T) {
	f := fixture(t, "broken")
	type check func(p *Port) error
	gids := func(p *Port) error { _, err := p.GIDs(); return err }
	hw := func(p *Port) error { _, err := p.HwCounters(); return err }
	pma := func(p *Port) error { _, err := p.Counters(); return err }
	for _, tc := range []struct {
		ca       string
		on       check // nil: CA itself fails
		file     string
		contains string
		is       error
	}{
		{"badguid", nil, "node_guid", `got "0c42:a103:0016", want four colon-separated`, nil},
		{"badtype", nil, "node_type", `got "CA", want "%d: %s"`, nil},
		{"badstate", nil, "ports/1/state", `got "ACTIVE"`, nil},
		{"badphys", nil, "ports/1/phys_state", `got "5:LinkUp"`, nil},
		{"badrate", nil, "ports/1/rate", `got "fast", want "%d%s Gb/sec (%dX%s)"`, nil},
		{"badlid", nil, "ports/1/lid", `got "0xfffffffff", want "0x%x"`, nil},
		{"badlmc", nil, "ports/1/lid_mask_count", `got "256"`, nil},
		{"badpkey", nil, "ports/1/pkeys/0", `got "0x1ffff", want "0x%04x"`, nil},
		{"badportname", nil, "ports/x", `want a decimal port number`, nil},
		{"port0ca", nil, "ports/0", `port 0 exists only on a switch (node type 2), this is a CA (1)`, nil},
		{"nodescdir", nil, "node_desc", "is a directory", syscall.EISDIR},
		{"typeloop", nil, "node_type", "too many levels of symbolic links", syscall.ELOOP},
		{"noports", nil, "ports", "no such file", os.ErrNotExist},
		{"nostate", nil, "ports/1/state", "no such file", os.ErrNotExist},
		{"badgid", gids, "ports/1/gids/0", `got "fe80::1", want eight`, nil},
		{"badgidtype", gids, "ports/1/gid_attrs/ndevs/0", "is a directory", syscall.EISDIR},
		{"badhwcounter", hw, "ports/1/hw_counters/bad", `got "12abc", want a decimal 64-bit counter`, nil},
		{"badcounter", pma, "ports/1/counters/bad", `got "-1", want a decimal counter`, nil},
	} {
		t.Run(tc.ca, func(t *testing.T) {
			ca, err := f.CA(tc.ca)
			if tc.on != nil {
				if err != nil {
					t.Fatal(err)
				}
				err = tc.on(ca.Ports[0])
			}
			if err == nil {
				t.Fatal("no error")
			}
			var e *Error
			if !errors.As(err, &e) || e.Device == "" {
				t.Errorf("%v: not an *Error with a device", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, filepath.Join("testdata/broken/class/infiniband", tc.ca, tc.file)) {
				t.Errorf("%q does not name the file %s", msg, tc.file)
			}
			if !strings.Contains(msg, tc.contains) {
				t.Errorf("%q does not say %q", msg, tc.contains)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("%v does not match %v", err, tc.is)
			}
			var pe *ParseError
			if tc.is == nil && !errors.As(err, &pe) {
				t.Errorf("%v is not a *ParseError", err)
			}
		})
	}
	// CAs returns the devices it can read and one error per broken one.
	cas, err := f.CAs()
	if err == nil {
		t.Error("CAs on the broken tree gave no error")
	}
	var got []string
	for _, ca := range cas {
		got = append(got, ca.Name)
	}
	if want := []string{"badcounter", "badgid", "badgidtype", "badhwcounter"}; !slices.Equal(got, want) {
		t.Errorf("CAs on the broken tree read %v, want the readable ones %v", got, want)
	}
	for _, name := range []string{"badguid", "typeloop", "badportname", "noports"} {
		if !strings.Contains(fmt.Sprint(err), "read CA "+name+":") {
			t.Errorf("CAs error does not name %s: %v", name, err)
		}
	}
}

// TestBadCharDevIsolated: a umad entry that cannot be read (its port is
// "x", its ibdev is missing) is an error of that entry only: CA, CAs and
// Port still read every device, and CharDevs returns the good entries
// with an error naming each bad one.
func TestBadCharDevIsolated(t *testing.T) {
	tree := fstest.MapFS{}
	for k, v := range mapTree(t, "testdata/rxe-6.1") {
		tree[k] = v
	}
	tree["class/infiniband_mad/umad7/ibdev"] = &fstest.MapFile{Data: []byte("rxe0\n")}
	tree["class/infiniband_mad/umad7/port"] = &fstest.MapFile{Data: []byte("x\n")}
	tree["class/infiniband_mad/umad8/port"] = &fstest.MapFile{Data: []byte("1\n")}
	f := NewFS(tree)
	devs, err := f.CharDevs()
	if err == nil || !strings.Contains(err.Error(), "umad7") || !strings.Contains(err.Error(), "umad8") {
		t.Errorf("CharDevs error %v does not name umad7 and umad8", err)
	}
	if len(devs) == 0 {
		t.Error("CharDevs returned no good entry beside the bad ones")
	}
	ca, err := f.CA("rxe0")
	if err != nil || ca.Ports[0].Umad == nil {
		t.Fatalf("CA(rxe0) = %+v, %v; want it read with its umad device", ca, err)
	}
	if _, err := f.Port("rxe0", 1); err != nil {
		t.Errorf("Port(rxe0, 1): %v", err)
	}
	if cas, err := f.CAs(); err != nil || len(cas) == 0 {
		t.Errorf("CAs = %d devices, %v", len(cas), err)
	}
}

// mapTree copies a fixture directory into a MapFS, following symbolic
// links (the fixtures link class/ entries to devices/ as sysfs does).
func mapTree(t *testing.T, dir string) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	fsys := os.DirFS(dir)
	var walk func(rel string)
	walk = func(rel string) {
		ents, err := fs.ReadDir(fsys, rel)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			p := path.Join(rel, e.Name())
			fi, err := fs.Stat(fsys, p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.IsDir() {
				walk(p)
				continue
			}
			b, err := fs.ReadFile(fsys, p)
			if err != nil {
				t.Fatal(err)
			}
			m[p] = &fstest.MapFile{Data: b}
		}
	}
	walk(".")
	return m
}

// CounterSet.Keep drops the counters a read found without a value: their
// files are closed and no longer read (a file that now holds garbage is
// not looked at), and Names shrinks to the kept ones.
func TestCounterSetKeep(t *testing.T) {
	root := t.TempDir()
	write := sysfstest.FileWriter(t, filepath.Join(root, "class/infiniband/dev0/ports/1/counters"))
	write("a_packets", "1\n")
	write("b_wait", "N/A (no PMA)\n")
	write("c_errors", "3\n")
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.OpenCounters("dev0", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	vals, ok := make([]uint64, 3), make([]bool, 3)
	if err := s.ReadValues(vals, ok); err != nil || !slices.Equal(ok, []bool{true, false, true}) {
		t.Fatalf("first read: %v %v, %v", vals, ok, err)
	}
	if err := s.Keep(ok[:1]); err == nil {
		t.Error("Keep with too few flags succeeded")
	}
	if err := s.Keep(ok); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Names(), []string{"a_packets", "c_errors"}) {
		t.Errorf("names after Keep: %v", s.Names())
	}
	write("b_wait", "garbage\n")
	write("c_errors", "4\n")
	clear(ok)
	if err := s.ReadValues(vals, ok); err != nil || vals[0] != 1 || vals[1] != 4 || !ok[0] || !ok[1] {
		t.Errorf("read after Keep: %v %v, %v; want [1 4], both with a value", vals[:2], ok[:2], err)
	}
	if err := (&CounterSet{}).Keep(nil); err == nil {
		t.Error("Keep on a zero set succeeded")
	}
}

// FindCharDev reads umad0, umad1, ... until one is missing, then the
// class's listing: a node after a gap (a removed device's) is found, and
// one before the gap without the listing.
func TestFindCharDevAfterGap(t *testing.T) {
	root := t.TempDir()
	for _, n := range []struct{ name, ca, port, dev string }{
		{"umad0", "a0", "1", "231:0"}, {"umad2", "b0", "1", "231:2"}, {"umad10", "c0", "2", "231:10"},
	} {
		dir := filepath.Join(root, "class", "infiniband_mad", n.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for file, v := range map[string]string{"ibdev": n.ca, "port": n.port, "dev": n.dev} {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ca   string
		port int
		want string
	}{{"a0", 1, "umad0"}, {"b0", 1, "umad2"}, {"c0", 2, "umad10"}} {
		d, err := f.FindCharDev(KindUmad, c.ca, c.port)
		if err != nil || d.Name != c.want {
			t.Errorf("FindCharDev(umad, %s, %d) = %+v, %v; want %s", c.ca, c.port, d, err, c.want)
		}
	}
	if _, err := f.FindCharDev(KindUmad, "c0", 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("FindCharDev of a port without umad: %v, want os.ErrNotExist", err)
	}
}

// FindCharDevName names what FindCharDev finds, for each node of the
// fixture, and fails where it fails.
func TestFindCharDevName(t *testing.T) {
	f := fixture(t, "rxe-6.1")
	devs, err := f.CharDevs()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		name, err := f.FindCharDevName(d.Kind, d.CA, d.Port)
		if err != nil || name != d.Name {
			t.Errorf("FindCharDevName(%s, %s, %d) = %q, %v; want %q", d.Kind, d.CA, d.Port, name, err, d.Name)
		}
	}
	if _, err := f.FindCharDevName(KindUmad, "rxe0", 2); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("FindCharDevName of a port without umad: %v, want os.ErrNotExist", err)
	}
}

// ReadPortInto reads what ReadPort reads, over whatever p held; a nil p
// is EINVAL.
func TestReadPortInto(t *testing.T) {
	f := fixture(t, "rxe-6.1")
	want, err := f.ReadPort("rxe0", 1, PartsAll)
	if err != nil {
		t.Fatal(err)
	}
	p := &Port{CA: "stale", Number: 9}
	if err := f.ReadPortInto(p, "rxe0", 1, PartsAll); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, p, cmpopts.IgnoreUnexported(Port{})); d != "" || p.fs != want.fs {
		t.Errorf("ReadPortInto (-ReadPort +Into):\n%s", d)
	}
	if err := f.ReadPortInto(nil, "rxe0", 1, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ReadPortInto(nil): %v, want EINVAL", err)
	}
	if err := f.ReadPortInto(p, "rxe0", 5, 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadPortInto of no port: %v, want os.ErrNotExist", err)
	}
}
