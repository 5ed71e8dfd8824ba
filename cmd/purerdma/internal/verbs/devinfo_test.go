package verbs

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/uverbs"
)

// rxeHCA is what Linux 6.1's rxe reports in the project's VM, as
// testdata/ibv_devinfo-v-rxe0-6.1.txt shows it (rdma-core's
// ibv_devinfo -v -d rxe0 in the VM: go run ./integration/vmrun -- ibv_devinfo -v -d rxe0).
func rxeHCA(name string, guid uint64, ipv4 [4]byte) *devinfoHCA {
	var g0, g1 rdma.GID
	g0[0], g0[1] = 0xfe, 0x80
	for i := 0; i < 8; i++ {
		g0[8+i] = byte(guid >> (56 - 8*i))
	}
	g1[10], g1[11] = 0xff, 0xff
	copy(g1[12:], ipv4[:])
	return &devinfoHCA{
		Dev: uverbs.Device{Name: name, NodeType: rdma.NodeCA, NodeGUID: rdma.GUID(guid)},
		Attr: uverbs.DeviceAttr{
			FWVer: "0.0.0", NodeGUID: rdma.GUID(guid), SysImageGUID: rdma.GUID(guid), MaxMRSize: ^uint64(0), PageSizeCap: 0xfffff000,
			VendorID: 0xffffff, MaxQP: 1048560, MaxQPWR: 1048576, DeviceCapFlags: 0x01223c76, MaxSGE: 32, MaxSGERd: 32,
			MaxCQ: 1048576, MaxCQE: 32767, MaxMR: 524287, MaxPD: 1048576, MaxQPRdAtom: 128, MaxResRdAtom: 258048,
			MaxQPInitRdAtom: 128, AtomicCap: uverbs.AtomicHCA, MaxMW: 524287, MaxMcastGrp: 8192, MaxMcastQPAttach: 56,
			MaxTotalMcastQPAttach: 458752, MaxAH: 32767, MaxSRQ: 917503, MaxSRQWR: 1048576, MaxSRQSGE: 27, MaxPKeys: 64,
			LocalCAAckDelay: 15, PhysPortCnt: 1, DeviceCapFlagsEx: 0x1223c76,
		},
		NumCompVectors: 2,
		Ports: []devinfoPort{{
			Num: 1,
			Attr: uverbs.PortAttr{
				State: rdma.PortActive, MaxMTU: uverbs.MTU4096, ActiveMTU: uverbs.MTU1024, LinkLayer: rdma.LinkLayerEthernet,
				MaxMsgSize: 0x800000, PortCapFlags: 0x00010000, MaxVLNum: 1, PKeyTableLen: 1, GIDTableLen: 1024,
				ActiveWidth: 1, ActiveSpeed: 8, PhysState: 5,
			},
			GIDs: []uverbs.GIDEntry{
				{GID: g0, Index: 0, Port: 1, Type: uverbs.GIDTypeRoCEv2},
				{GID: g1, Index: 1, Port: 1, Type: uverbs.GIDTypeRoCEv2},
			},
		}},
	}
}

func golden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDevinfoVerboseText(t *testing.T) {
	var out bytes.Buffer
	devinfoPrint(&out, rxeHCA("rxe0", 0xacade8fffe375f42, [4]byte{10, 77, 0, 1}), true)
	if diff := cmp.Diff(golden(t, "ibv_devinfo-v-rxe0-6.1.txt"), out.String()); diff != "" {
		t.Errorf("ibv_devinfo -v -d rxe0 differs (-rdma-core +purerdma):\n%s", diff)
	}
}

func TestDevinfoText(t *testing.T) {
	var out bytes.Buffer
	devinfoPrint(&out, rxeHCA("rxe0", 0xacade8fffe375f42, [4]byte{10, 77, 0, 1}), false)
	devinfoPrint(&out, rxeHCA("rxe1", 0xacdf59fffef0895d, [4]byte{10, 77, 0, 2}), false)
	if diff := cmp.Diff(golden(t, "ibv_devinfo-rxe-6.1.txt"), out.String()); diff != "" {
		t.Errorf("ibv_devinfo differs (-rdma-core +purerdma):\n%s", diff)
	}
}

// The parts rxe does not exercise: flags ibv_devinfo names and unknown
// ones, the ex capabilities mlx5 reports, IB GIDs in hex, RoCE v1.
func TestDevinfoVerboseOtherDevices(t *testing.T) {
	h := rxeHCA("mlx5_0", 0x0c42a10300a1b2c3, [4]byte{})
	a := &h.Attr
	a.FWVer = "16.35.2000"
	a.DeviceCapFlags = 1<<0 | 1<<29 | 1<<31
	a.DeviceCapFlagsEx = 1<<34 | 1<<40
	a.ODPCaps = uverbs.ODPCaps{GeneralCaps: 3 | 1<<7, RCODPCaps: 0x2f}
	a.CompletionTimestampMask = 0x7fffffffffffffff
	a.HCACoreClock = 156250
	a.RawPacketCaps = 0xf
	a.TSOCaps = uverbs.TSOCaps{MaxTSO: 262144, SupportedQPTs: 1 << 8}
	a.RSSCaps = uverbs.RSSCaps{SupportedQPTs: 1<<8 | 1<<4 | 1<<2, MaxRWQIndirectionTables: 1048576, MaxRWQIndirectionTableSize: 2048, RxHashFunction: 1, RxHashFieldsMask: 0xff}
	a.PacketPacingCaps = uverbs.PacketPacingCaps{QPRateLimitMin: 1, QPRateLimitMax: 100000000, SupportedQPTs: 1 << 8}
	a.TMCaps = uverbs.TMCaps{MaxRndvHdrSize: 64, MaxNumTags: 63, Flags: 1, MaxOps: 32768, MaxSGE: 1}
	a.CQModCaps = uverbs.CQModerationCaps{MaxCQCount: 65535, MaxCQPeriod: 4095}
	a.MaxDMSize = 131072
	a.MaxFMR, a.MaxMapPerFMR = 1, 2
	h.BoardID = "MT_0000000008"
	h.Ports[0].GIDs[0].Type = uverbs.GIDTypeRoCEv1
	ib := h.Ports[0]
	ib.Num = 2
	ib.Attr.LinkLayer = rdma.LinkLayerInfiniBand
	ib.Attr.ActiveSpeed, ib.Attr.ActiveWidth, ib.Attr.MaxVLNum, ib.Attr.State = 128, 2, 4, 7
	ib.GIDs = []uverbs.GIDEntry{{GID: h.Ports[0].GIDs[0].GID, Index: 0, Type: uverbs.GIDTypeIB}, {Index: 3, Type: uverbs.GIDTypeIB}}
	h.Ports = append(h.Ports, ib)
	a.PhysPortCnt = 2
	var out bytes.Buffer
	devinfoPrint(&out, h, true)
	s := out.String()
	for _, want := range []string{
		"\tfw_ver:\t\t\t\t16.35.2000\n",
		"\tboard_id:\t\t\tMT_0000000008\n",
		"\t\t\t\t\tRESIZE_MAX_WR\n\t\t\t\t\tMANAGED_FLOW_STEERING\n\t\t\t\t\tUnknown flags: 0x80000000\n",
		"\tmax_map_per_fmr:\t\t2\n",
		"\tgeneral_odp_caps:\n\t\t\t\t\tODP_SUPPORT\n\t\t\t\t\tODP_SUPPORT_IMPLICIT\n\t\t\t\t\tUnknown flags: 0x80\n",
		"\trc_odp_caps:\n\t\t\t\t\tSUPPORT_SEND\n\t\t\t\t\tSUPPORT_RECV\n\t\t\t\t\tSUPPORT_WRITE\n\t\t\t\t\tSUPPORT_READ\n\t\t\t\t\tSUPPORT_SRQ\n\tuc_odp_caps:\n\t\t\t\t\tNO SUPPORT\n",
		"\tcompletion timestamp_mask:\t\t\t0x7fffffffffffffff\n",
		"\thca_core_clock:\t\t\t156250kHZ\n",
		"\traw packet caps:\n\t\t\t\t\tC-VLAN stripping offload\n\t\t\t\t\tScatter FCS offload\n\t\t\t\t\tIP csum offload\n\t\t\t\t\tDelay drop\n",
		"\tdevice_cap_flags_ex:\t\t0x10400000000\n\t\t\t\t\tRAW_SCATTER_FCS\n\t\t\t\t\tUnknown flags: 0x10000000000\n",
		"\ttso_caps:\n\t\tmax_tso:\t\t\t262144\n\t\tsupported_qp:\n\t\t\t\t\tSUPPORT_RAW_PACKET\n",
		"\t\trx_hash_function:\t\t\t\t0x1\n\t\trx_hash_fields_mask:\t\t\t\t0xFF\n\t\tsupported_qp:\n\t\t\t\t\tSUPPORT_RAW_PACKET\n\t\t\t\t\tSUPPORT_UD\n\t\t\t\t\tUnknown flags: 0x4\n",
		"\t\tqp_rate_limit_min:\t1kbps\n\t\tqp_rate_limit_max:\t100000000kbps\n\t\tsupported_qp:\n\t\t\t\t\tSUPPORT_RAW_PACKET\n",
		"\tmax_rndv_hdr_size:\t\t64\n\tmax_num_tags:\t\t\t63\n\tmax_ops:\t\t\t32768\n\tmax_sge:\t\t\t1\n\tflags:\n\t\t\t\t\tIBV_TM_CAP_RC\n",
		"\n\tcq moderation caps:\n\t\tmax_cq_count:\t65535\n\t\tmax_cq_period:\t4095 us\n\n",
		"\tmaximum available device memory:\t131072Bytes\n\n\tnum_comp_vectors:\t\t2\n",
		"\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0c42:a103:00a1:b2c3, RoCE v1\n",
		"\t\t\tstate:\t\t\tinvalid state (7)\n",
		"\t\t\tactive_width:\t\t4X (2)\n\t\t\tactive_speed:\t\t100.0 Gbps (128)\n",
		"\t\t\tmax_vl_num:\t\t8 (4)\n",
		"\t\t\tlink_layer:\t\tInfiniBand\n",
		"\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0c42:a103:00a1:b2c3\n\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(s, "GID[  3]") {
		t.Error("a GID with a zero interface id was printed")
	}
	// An iWARP device prints no phys_state.
	h.Dev.NodeType = rdma.NodeRNIC
	out.Reset()
	devinfoPrint(&out, h, true)
	if s := out.String(); strings.Contains(s, "phys_state") || !strings.Contains(s, "\ttransport:\t\t\tiWARP (1)\n") {
		t.Errorf("iWARP output:\n%s", s)
	}
}

func TestDevinfoJSON(t *testing.T) {
	j := rxeHCA("rxe0", 0xacade8fffe375f42, [4]byte{10, 77, 0, 1}).json()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	ports := back["ports"].([]any)
	p := ports[0].(map[string]any)
	gids := p["gids"].([]any)
	if back["hca_id"] != "rxe0" || back["node_guid"] != "acad:e8ff:fe37:5f42" || back["transport"] != "InfiniBand" ||
		p["state"] != "PORT_ACTIVE" || p["active_mtu"] != float64(1024) || gids[1].(map[string]any)["gid"] != "::ffff:10.77.0.1" {
		t.Errorf("JSON %s", b)
	}
}

func TestDevicesText(t *testing.T) {
	var out bytes.Buffer
	devs := []uverbs.Device{{Name: "rxe0", NodeGUID: 0xacade8fffe375f42}, {Name: "rxe1", NodeGUID: 0xacdf59fffef0895d}}
	printDevices(&out, devs)
	if diff := cmp.Diff(golden(t, "ibv_devices-rxe-6.1.txt"), out.String()); diff != "" {
		t.Errorf("ibv_devices differs (-rdma-core +purerdma):\n%s", diff)
	}
}

// The tools against a sysfs fixture with no infiniband_verbs class:
// ibv_devices prints its header, ibv_devinfo says there are no devices.
func TestToolsWithoutDevices(t *testing.T) {
	env := &Env{Uverbs: &uverbs.Options{Sysfs: sysfsAt(t, t.TempDir()), Generic: true}}
	var out, errb bytes.Buffer
	if err := env.run([]string{"purerdma", "devices"}, &out, &errb); err != nil || out.String() != "    device          \t   node GUID\n    ------          \t----------------\n" {
		t.Errorf("devices: %q, %v", out.String(), err)
	}
	out.Reset()
	err := env.run([]string{"purerdma", "devinfo"}, &out, &errb)
	if ee, ok := err.(cli.ExitError); !ok || ee.Code != 255 || errb.String() != "No IB devices found\n" {
		t.Errorf("devinfo: %v, stderr %q", err, errb.String())
	}
	errb.Reset()
	err = env.run([]string{"ibv_devinfo", "-d", "rxe7"}, &out, &errb)
	if ee, ok := err.(cli.ExitError); !ok || ee.Code != 255 || errb.String() != "IB device 'rxe7' wasn't found\n" {
		t.Errorf("devinfo -d rxe7: %v, stderr %q", err, errb.String())
	}
	out.Reset()
	if err := env.run([]string{"purerdma", "devinfo", "-l"}, &out, &errb); err != nil || out.String() != "0 HCAs found:\n\n" {
		t.Errorf("devinfo -l: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := env.run([]string{"purerdma", "devices", "--json"}, &out, &errb); err != nil || strings.TrimSpace(out.String()) != "[]" {
		t.Errorf("devices --json: %q, %v", out.String(), err)
	}
}

func TestDevinfoOptions(t *testing.T) {
	env := &Env{Uverbs: &uverbs.Options{Sysfs: sysfsAt(t, "../../../../uverbs/testdata/sysfs-rxe"), Generic: true}}
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"-l"}, 0, "2 HCAs found:\n\trxe0\n\trxe1\n\n", ""},
		{[]string{"-v", "-l"}, 0, "2 HCAs found:", ""},
		{[]string{"--list"}, 0, "2 HCAs found:", ""},
		{[]string{"--li"}, 0, "2 HCAs found:", ""},
		{[]string{"-i", "0"}, 1, "Usage: ibv_devinfo", ""},
		{[]string{"-iabc"}, 1, "Usage: ibv_devinfo", ""},
		{[]string{"--ib-port=-1"}, 1, "Usage: ibv_devinfo", ""},
		{[]string{"-x"}, 255, "Usage: ibv_devinfo", "ibv_devinfo: invalid option -- 'x'\n"},
		{[]string{"--frob"}, 255, "Usage: ibv_devinfo", "ibv_devinfo: unrecognized option '--frob'\n"},
		{[]string{"-d"}, 255, "Usage: ibv_devinfo", "ibv_devinfo: option requires an argument -- 'd'\n"},
		{[]string{"--ib-dev=nope"}, 255, "", "IB device 'nope' wasn't found\n"},
		{[]string{"-vdnope"}, 255, "", "IB device 'nope' wasn't found\n"},
		{[]string{"-h"}, 0, "Usage: ibv_devinfo", ""},
	} {
		var out, errb bytes.Buffer
		err := env.run(append([]string{"ibv_devinfo"}, tc.args...), &out, &errb)
		code := 0
		if ee, ok := err.(cli.ExitError); ok {
			code = ee.Code
		} else if err != nil {
			code = -1
		}
		if code != tc.code || !strings.HasPrefix(out.String(), tc.stdout) || errb.String() != tc.stderr {
			t.Errorf("%q: code %d, stdout %q, stderr %q", tc.args, code, out.String(), errb.String())
		}
	}
}

func TestCStrtol(t *testing.T) {
	for s, want := range map[string]int64{"1": 1, " 2x": 2, "0x1f": 31, "010": 8, "-3": -3, "abc": 0, "": 0, "+7": 7, "0x": 0, "09": 0} {
		if got := cli.CStrtol(s); got != want {
			t.Errorf("cli.CStrtol(%q) = %d, want %d", s, got, want)
		}
	}
}
