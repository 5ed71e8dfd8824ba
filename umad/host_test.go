package umad

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/sysfs"
)

func TestInitChecksABI(t *testing.T) {
	for _, tc := range []struct {
		abi     string
		want    error
		message string
	}{
		{"5", nil, ""},
		{"4", ErrNotSupported, "umad ABI is version 4, this library speaks 5"},
		{"6", ErrNotSupported, "version 6"},
		{"", os.ErrNotExist, "modprobe ib_umad"},
	} {
		h := &Host{Sysfs: tFS(t, tSysfs(t, tc.abi))}
		err := h.Init()
		if tc.want == nil {
			if err != nil {
				t.Errorf("abi %q: %v", tc.abi, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.message) {
			t.Errorf("abi %q: %v, want an error matching %v saying %q", tc.abi, err, tc.want, tc.message)
		}
		// OpenPort makes the same check.
		if _, err := h.OpenPort("x", 1); !errors.Is(err, tc.want) {
			t.Errorf("abi %q: OpenPort: %v", tc.abi, err)
		}
	}
}

func TestCANames(t *testing.T) {
	root := tSysfs(t, "5",
		tCA{name: "mlx5_1", ports: []tPort{ib(1, active, linkUp, 2)}},
		tCA{name: "mlx5_0", ports: []tPort{ib(1, active, linkUp, 1)}},
		tCA{name: "iwp0", nodeType: "4: RNIC", ports: []tPort{roce(1, active, linkUp, 1)}},
		tCA{name: "sw0", nodeType: "2: switch"},
		tCA{name: "a_name_of_twenty_chr", ports: []tPort{ib(1, active, linkUp, 3)}},
	)
	got, err := (&Host{Sysfs: tFS(t, root)}).CANames()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"mlx5_0", "mlx5_1", "sw0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("CANames = %q, want %q (sorted; node types 1–3; names under 20 characters)", got, want)
	}
	_, err = (&Host{Sysfs: tFS(t, t.TempDir())}).CANames()
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no class/infiniband: %v", err)
	}
}

func TestLookupCA(t *testing.T) {
	e := newEnv(t, tCA{name: "mlx5_0", guid: 0x0002c903000a0b0c, ports: []tPort{ib(1, active, linkUp, 7), ib(2, down, polling, 0)}})
	ca, err := e.host.LookupCA("mlx5_0")
	if err != nil {
		t.Fatal(err)
	}
	if ca.Name != "mlx5_0" || ca.NodeType != 1 || ca.NumPorts() != 2 || len(ca.Ports) != 3 || ca.Ports[0] != nil ||
		ca.NodeGUID != 0x0002c903000a0b0c || ca.SysImageGUID != ca.NodeGUID ||
		str(ca.FWVersion) != "20.1.2" || str(ca.HCAType) != "MT4123" || str(ca.HWRev) != "0x0" {
		t.Fatalf("CA %+v", ca)
	}
	// The ports are sysfs' records, the same ones sysfs lists in order.
	if len(ca.CA.Ports) != 2 || ca.CA.Ports[0].Number != 1 || ca.CA.Ports[1].Number != 2 {
		t.Fatalf("sysfs' ports %+v", ca.CA.Ports)
	}
	p := ca.Ports[1]
	if p.CA != "mlx5_0" || p.Number != 1 || *p.LID != 7 || *p.SMLID != 1 || p.State != rdma.PortActive || p.PhysState != 5 ||
		p.Rate == nil || p.Rate.Mbps != 100000 || p.Rate.Raw != "100 Gb/sec (4X EDR)" || *p.CapMask != 0x2651e848 ||
		p.GIDPrefix != 0xfe80000000000000 || p.PortGUID != 0x0002c90000010007 || !reflect.DeepEqual(p.PKeys, []uint16{0xffff}) ||
		p.LinkLayer != rdma.LinkLayerInfiniBand {
		t.Fatalf("port 1: %+v", *p)
	}
	if ca.Ports[2].State != 1 || ca.Ports[2].PhysState != 2 {
		t.Fatalf("port 2 %+v", ca.Ports[2])
	}
	for port, want := range map[int]string{1: "/dev/infiniband/umad0", 2: "/dev/infiniband/umad1"} {
		if node, err := e.host.UmadNode("mlx5_0", port); err != nil || node != want {
			t.Fatalf("UmadNode(mlx5_0, %d) = %q, %v, want %q", port, node, err, want)
		}
	}
	if _, err := e.host.UmadNode("mlx5_0", 3); !errors.Is(err, ErrInvalidPort) {
		t.Fatalf("UmadNode(mlx5_0, 3) = %v, want ErrInvalidPort", err)
	}
	guids, err := e.host.CAPortGUIDs("mlx5_0")
	if err != nil || !reflect.DeepEqual(guids, []rdma.GUID{0, 0x0002c90000010007, 0x0002c90000010000}) {
		t.Fatalf("CAPortGUIDs = %#x, %v", guids, err)
	}
	// The default CA.
	if ca, err := e.host.LookupCA(""); err != nil || ca.Name != "mlx5_0" {
		t.Fatalf("LookupCA(\"\") = %v, %v", ca, err)
	}
	if _, err := e.host.LookupCA("mlx9_9"); !errors.Is(err, ErrNoDevice) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LookupCA(missing) = %v", err)
	}
	for _, bad := range []string{"../x", ".", "a/b"} {
		if _, err := e.host.LookupCA(bad); !errors.Is(err, ErrNoDevice) {
			t.Fatalf("LookupCA(%q) = %v", bad, err)
		}
	}
	// link_layer missing reads as unspecified (libibumad's "IB").
	root := tSysfs(t, "5", tCA{name: "old", ports: []tPort{{num: 1, state: active, phys: linkUp}}})
	p2, err := (&Host{Sysfs: tFS(t, root)}).LookupPort("old", 1)
	if err != nil || p2.LinkLayer != rdma.LinkLayerUnspecified || p2.LinkLayerName != nil {
		t.Fatalf("no link_layer: %+v, %v", p2, err)
	}
}

// TestSwitch: a switch (node type 2) has only its management port 0,
// which umad reads, chooses and opens like any port.
func TestSwitch(t *testing.T) {
	e := newEnv(t, tCA{name: "sw0", nodeType: "2: switch", guid: 0x0c42a10300aabb00, ports: []tPort{ib(0, active, linkUp, 2)}})
	ca, err := e.host.LookupCA("sw0")
	if err != nil {
		t.Fatal(err)
	}
	if ca.NodeType != 2 || ca.NumPorts() != 0 || len(ca.Ports) != 1 || ca.Ports[0] == nil ||
		ca.Ports[0].Number != 0 || *ca.Ports[0].LID != 2 {
		t.Fatalf("switch %+v, port 0 %+v", ca, ca.Ports[0])
	}
	if node, err := e.host.UmadNode("sw0", 0); err != nil || node != "/dev/infiniband/umad0" {
		t.Fatalf("UmadNode(sw0, 0) = %q, %v", node, err)
	}
	guids, err := e.host.CAPortGUIDs("sw0")
	if err != nil || len(guids) != 1 || guids[0] != 0x0002c90000010002 {
		t.Fatalf("CAPortGUIDs = %#x, %v", guids, err)
	}
	for _, c := range []struct {
		ca   string
		port int
	}{{"sw0", 0}, {"", 0}} {
		p := e.open(t, c.ca, c.port)
		if p.CA() != "sw0" || p.PortNum() != 0 || p.String() != "sw0/0" {
			t.Fatalf("OpenPort(%q, %d) = %v", c.ca, c.port, p)
		}
		p.Close()
	}
	if _, err := e.host.LookupPort("sw0", 1); !errors.Is(err, ErrInvalidPort) {
		t.Fatalf("port 1 of a switch: %v", err)
	}
}

// TestPortSelection checks the seed's selection rules for umad_get_port
// and umad_open_port, with libibumad's preferences.
func TestPortSelection(t *testing.T) {
	type want struct {
		ca   string
		port int
		err  error
	}
	for _, tc := range []struct {
		name string
		cas  []tCA
		ca   string
		port int
		want want
	}{
		{"both given: taken as given", ibPair(), "mlx5_1", 1, want{"mlx5_1", 1, nil}},
		{"both given, port down: still taken",
			[]tCA{{name: "a", ports: []tPort{ib(1, down, disabled, 0)}}}, "a", 1, want{"a", 1, nil}},
		{"both given, no such port", ibPair(), "mlx5_1", 2, want{err: ErrInvalidPort}},
		{"both given, no such CA", ibPair(), "mlx9", 1, want{err: ErrNoDevice}},
		{"CA only: first ACTIVE IB port",
			[]tCA{{name: "a", ports: []tPort{ib(1, down, linkUp, 0), ib(2, active, linkUp, 5), ib(3, active, linkUp, 6)}}},
			"a", 0, want{"a", 2, nil}},
		{"CA only: else first LinkUp IB port",
			[]tCA{{name: "a", ports: []tPort{ib(1, down, polling, 0), ib(2, down, linkUp, 0), ib(3, down, linkUp, 0)}}},
			"a", 0, want{"a", 2, nil}},
		{"CA only: IB preferred over an earlier active RoCE port",
			[]tCA{{name: "a", ports: []tPort{roce(1, active, linkUp, 1), ib(2, down, linkUp, 0)}}},
			"a", 0, want{"a", 2, nil}},
		{"CA only: else first port not Disabled, any link layer",
			[]tCA{{name: "a", ports: []tPort{roce(1, down, disabled, 1), roce(2, down, polling, 2), ib(3, down, disabled, 0)}}},
			"a", 0, want{"a", 2, nil}},
		{"CA only: everything Disabled",
			[]tCA{{name: "a", ports: []tPort{ib(1, down, disabled, 0)}}}, "a", 0, want{err: ErrNoDevice}},
		{"port only: that port on any CA, the first with it ACTIVE",
			[]tCA{
				{name: "a", ports: []tPort{ib(1, active, linkUp, 1)}},
				{name: "b", ports: []tPort{ib(1, down, polling, 0), ib(2, down, polling, 0)}},
				{name: "c", ports: []tPort{ib(1, down, polling, 0), ib(2, active, linkUp, 9)}},
			}, "", 2, want{"c", 2, nil}},
		{"port only: else the first CA where it is not Disabled",
			[]tCA{
				{name: "a", ports: []tPort{ib(1, active, linkUp, 1)}},
				{name: "b", ports: []tPort{ib(1, down, polling, 0), ib(2, down, disabled, 0)}},
				{name: "c", ports: []tPort{ib(1, down, polling, 0), ib(2, down, polling, 0)}},
			}, "", 2, want{"c", 2, nil}},
		{"port only: a RoCE port qualifies", rxePair(), "", 1, want{"rxe0", 1, nil}},
		{"port only: nobody has it", rxePair(), "", 2, want{err: ErrNoDevice}},
		{"neither: the first CA with an ACTIVE IB port wins over earlier ones",
			[]tCA{
				{name: "a", ports: []tPort{ib(1, down, linkUp, 0)}},
				{name: "b", ports: []tPort{roce(1, active, linkUp, 2)}},
				{name: "c", ports: []tPort{ib(1, down, polling, 0), ib(2, active, linkUp, 3)}},
			}, "", 0, want{"c", 2, nil}},
		{"neither: else the first CA with a usable port",
			[]tCA{
				{name: "a", ports: []tPort{ib(1, down, disabled, 0)}},
				{name: "b", ports: []tPort{ib(1, down, linkUp, 0)}},
				{name: "c", ports: []tPort{ib(1, down, linkUp, 0)}},
			}, "", 0, want{"b", 1, nil}},
		{"neither: RoCE only (rxe0, rxe1)", rxePair(), "", 0, want{"rxe0", 1, nil}},
		{"neither: a switch without ports/0",
			[]tCA{{name: "sw", nodeType: "2: switch"}}, "", 0, want{err: ErrInvalidPort}},
		{"neither: a switch's management port 0",
			[]tCA{{name: "sw", nodeType: "2: switch", ports: []tPort{ib(0, active, linkUp, 2)}}}, "", 0, want{"sw", 0, nil}},
		{"CA only: a switch's port 0",
			[]tCA{{name: "sw", nodeType: "2: switch", ports: []tPort{ib(0, down, polling, 0)}}}, "sw", 0, want{"sw", 0, nil}},
		{"neither: no devices", nil, "", 0, want{err: ErrNoDevice}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Host{Sysfs: tFS(t, tSysfs(t, "5", tc.cas...))}
			p, err := h.LookupPort(tc.ca, tc.port)
			if tc.want.err != nil {
				if !errors.Is(err, tc.want.err) {
					t.Fatalf("LookupPort(%q, %d) = %+v, %v; want %v", tc.ca, tc.port, p, err, tc.want.err)
				}
				return
			}
			if err != nil || p.CA != tc.want.ca || p.Number != tc.want.port {
				t.Fatalf("LookupPort(%q, %d) = %+v, %v; want %s/%d", tc.ca, tc.port, p, err, tc.want.ca, tc.want.port)
			}
		})
	}
	if _, err := (&Host{}).LookupPort("x", -1); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("negative port: %v", err)
	}
}

func TestOpenPortErrors(t *testing.T) {
	cas := []tCA{
		{name: "mlx5_0", ports: []tPort{ib(1, active, linkUp, 1), {num: 2, state: active, phys: linkUp, linkLayer: linkInfiniBand, noUmad: true}}},
	}
	e := newEnv(t, cas...)
	all := []error{ErrNoDevice, ErrInvalidPort, ErrOpenFailed}
	check := func(err, want error) {
		t.Helper()
		for _, s := range all {
			if errors.Is(err, s) != (s == want) {
				t.Fatalf("%v: errors.Is(err, %v) = %v", err, s, !(s == want))
			}
		}
	}
	_, err := e.host.OpenPort("mlx9_0", 1)
	check(err, ErrNoDevice)
	if !errors.Is(err, syscall.ENODEV) {
		t.Fatalf("ErrNoDevice must match ENODEV: %v", err)
	}
	_, err = e.host.OpenPort("mlx5_0", 3)
	check(err, ErrInvalidPort)
	_, err = e.host.OpenPort("mlx5_0", 2) // no umad node
	check(err, ErrInvalidPort)
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "no umad device") {
		t.Fatalf("%v", err)
	}
	_, err = e.host.OpenPort("mlx5_0", -1)
	check(err, ErrInvalidPort)

	// A node that cannot be opened: permission denied.
	e.host.open = func(path string) (*sys.FD, error) {
		return nil, &os.PathError{Op: "open", Path: path, Err: syscall.EACCES}
	}
	_, err = e.host.OpenPort("mlx5_0", 1)
	check(err, ErrOpenFailed)
	if !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), "udev") || !strings.Contains(err.Error(), "run as root") {
		t.Fatalf("permission error %q must match os.ErrPermission and say how to grant access", err)
	}
	// The real open of a missing node (no fake): ErrOpenFailed, os.ErrNotExist.
	e.host.open = nil
	e.host.DevDir = filepath.Join(t.TempDir(), "nodev")
	_, err = e.host.OpenPort("mlx5_0", 1)
	check(err, ErrOpenFailed)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%v", err)
	}
}

func TestOpenPortBasics(t *testing.T) {
	e := newEnv(t, rxePair()...)
	p := e.open(t, "", 0)
	if p.CA() != "rxe0" || p.PortNum() != 1 || p.Device() != "/dev/infiniband/umad0" || p.String() != "rxe0/1" ||
		p.LinkLayer() != rdma.LinkLayerEthernet || p.HeaderSize() != 64 || p.FD() != -1 {
		t.Fatalf("port %v: %s %d %s %s hdr %d fd %d", p, p.CA(), p.PortNum(), p.Device(), p.LinkLayer(), p.HeaderSize(), p.FD())
	}
	if e.files[0].HeaderSize() != 64 {
		t.Fatal("OpenPort must enable the 64-byte header (IB_USER_MAD_ENABLE_PKEY)")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal("a second Close must return nil")
	}
}

// Port.Info is the port LookupPort reads, kept from OpenPort: a copy the
// caller may change.
func TestPortInfo(t *testing.T) {
	e := newEnv(t, tCA{name: "mlx5_0", guid: 0x0002c903000a0b0c, ports: []tPort{ib(1, active, linkUp, 7), ib(2, down, polling, 0)}})
	p := e.open(t, "mlx5_0", 1)
	want, err := e.host.LookupPort("mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Info()
	if !reflect.DeepEqual(got, *want) {
		t.Fatalf("Info() = %+v, LookupPort = %+v", got, *want)
	}
	got.PKeys[0] = 0
	if p.Info().PKeys[0] != 0xffff {
		t.Error("Info shares its P_Key table with the caller")
	}
}

// tFS is the sysfs tree at root.
func tFS(t testing.TB, root string) *sysfs.FS {
	t.Helper()
	f, err := sysfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func str(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestHostSysfsFS: the Host reads every file through its Sysfs, which
// may be any tree (here an fs.FS, not a directory path), and libibumad's
// choices work on it as on /sys.
func TestHostSysfsFS(t *testing.T) {
	root := tSysfs(t, "5", tCA{name: "mlx5_0", ports: []tPort{ib(1, down, polling, 0), ib(2, active, linkUp, 4)}})
	h := &Host{Sysfs: sysfs.NewFS(os.DirFS(root))}
	if err := h.Init(); err != nil {
		t.Fatal(err)
	}
	names, err := h.CANames()
	if err != nil || !reflect.DeepEqual(names, []string{"mlx5_0"}) {
		t.Fatalf("CANames = %q, %v", names, err)
	}
	p, err := h.LookupPort("", 0)
	if err != nil || p.CA != "mlx5_0" || p.Number != 2 || p.PortGUID != 0x0002c90000010004 {
		t.Fatalf("LookupPort(\"\", 0) = %+v, %v, want the ACTIVE port 2", p, err)
	}
	if _, err := h.LookupCA("nosuch"); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("LookupCA(nosuch) = %v", err)
	}
	if _, err := h.LookupPort("mlx5_0", 3); !errors.Is(err, ErrInvalidPort) {
		t.Fatalf("LookupPort(mlx5_0, 3) = %v", err)
	}
}

// TestCANamesUnreadable: as libibumad's umad_get_cas_names, which reads
// node_type alone, a device whose other files sysfs cannot read is listed;
// LookupCA then says what is wrong, and the default port skips it.
func TestCANamesUnreadable(t *testing.T) {
	root := tSysfs(t, "5",
		tCA{name: "mlx5_0", ports: []tPort{ib(1, active, linkUp, 1)}},
		tCA{name: "mlx5_1", ports: []tPort{ib(1, active, linkUp, 2)}})
	if err := os.WriteFile(filepath.Join(root, "class/infiniband/mlx5_0/ports/1/state"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &Host{Sysfs: tFS(t, root)}
	names, err := h.CANames()
	if err != nil || !reflect.DeepEqual(names, []string{"mlx5_0", "mlx5_1"}) {
		t.Fatalf("CANames = %q, %v", names, err)
	}
	if _, err := h.LookupCA("mlx5_0"); err == nil || errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "state") {
		t.Fatalf("LookupCA(mlx5_0) = %v, want the state file's error", err)
	}
	if p, err := h.LookupPort("", 0); err != nil || p.CA != "mlx5_1" {
		t.Fatalf("LookupPort(\"\", 0) = %+v, %v, want mlx5_1's port", p, err)
	}
	cas, errs, err := h.LookupCAs()
	if err != nil || len(cas) != 2 || cas[0] != nil || errs[0] == nil || cas[1] == nil || errs[1] != nil {
		t.Fatalf("LookupCAs() = %v, %v, %v", cas, errs, err)
	}
}
