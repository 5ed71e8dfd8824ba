package umad

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/internal/sys/systest"
	"github.com/purerdma/rdma/umad/internal/umadmodel"
)

// TestMain fails the run when a test leaves a descriptor open.
func TestMain(m *testing.M) { os.Exit(systest.Main(m)) }

// tPort describes a port of a test CA.
type tPort struct {
	num       int
	state     string // "4: ACTIVE"
	phys      string // "5: LinkUp"
	linkLayer string // "" for no link_layer file
	lid       uint16
	gid       [16]byte
	noUmad    bool
}

// tCA describes a test CA.
type tCA struct {
	name     string
	nodeType string // "1: CA"
	guid     uint64
	ports    []tPort
}

func ib(num int, state, phys string, lid uint16) tPort {
	return tPort{num: num, state: state, phys: phys, linkLayer: linkInfiniBand, lid: lid,
		gid: [16]byte{0xfe, 0x80, 8: 0x00, 9: 0x02, 10: 0xc9, 13: 0x01, 14: byte(lid >> 8), 15: byte(lid)}}
}

func roce(num int, state, phys string, last byte) tPort {
	return tPort{num: num, state: state, phys: phys, linkLayer: linkEthernet,
		gid: [16]byte{0xfe, 0x80, 8: 0xac, 9: 0xad, 10: 0xe8, 11: 0xff, 12: 0xfe, 13: 0x37, 14: 0x5f, 15: last}}
}

// link_layer's texts in the test trees.
const (
	linkInfiniBand = "InfiniBand"
	linkEthernet   = "Ethernet"
)

const (
	active   = "4: ACTIVE"
	down     = "1: DOWN"
	linkUp   = "5: LinkUp"
	polling  = "2: Polling"
	disabled = "3: Disabled"
)

func tWrite(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func tGID(g [16]byte) string {
	var parts []string
	for i := 0; i < 16; i += 2 {
		parts = append(parts, fmt.Sprintf("%02x%02x", g[i], g[i+1]))
	}
	return strings.Join(parts, ":")
}

// tSysfs writes a sysfs tree with the CAs in the kernel's formats and
// returns its root. umad nodes are numbered in the order of the ports.
func tSysfs(t testing.TB, abi string, cas ...tCA) string {
	t.Helper()
	root := t.TempDir()
	if abi != "" {
		tWrite(t, filepath.Join(root, "class/infiniband_mad/abi_version"), abi)
	}
	os.MkdirAll(filepath.Join(root, "class/infiniband"), 0o755)
	umad := 0
	for _, ca := range cas {
		dir := filepath.Join(root, "class/infiniband", ca.name)
		nt := ca.nodeType
		if nt == "" {
			nt = "1: CA"
		}
		g := ca.guid
		guid := fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48, g>>32&0xffff, g>>16&0xffff, g&0xffff)
		tWrite(t, filepath.Join(dir, "node_type"), nt)
		tWrite(t, filepath.Join(dir, "node_guid"), guid)
		tWrite(t, filepath.Join(dir, "sys_image_guid"), guid)
		tWrite(t, filepath.Join(dir, "fw_ver"), "20.1.2")
		tWrite(t, filepath.Join(dir, "hca_type"), "MT4123")
		tWrite(t, filepath.Join(dir, "hw_rev"), "0x0")
		os.MkdirAll(filepath.Join(dir, "ports"), 0o755)
		for _, p := range ca.ports {
			pd := filepath.Join(dir, "ports", fmt.Sprint(p.num))
			tWrite(t, filepath.Join(pd, "state"), p.state)
			tWrite(t, filepath.Join(pd, "phys_state"), p.phys)
			tWrite(t, filepath.Join(pd, "rate"), "100 Gb/sec (4X EDR)")
			tWrite(t, filepath.Join(pd, "lid"), fmt.Sprintf("%#x", p.lid))
			tWrite(t, filepath.Join(pd, "sm_lid"), "0x1")
			tWrite(t, filepath.Join(pd, "lid_mask_count"), "0")
			tWrite(t, filepath.Join(pd, "sm_sl"), "0")
			tWrite(t, filepath.Join(pd, "cap_mask"), "0x2651e848")
			if p.linkLayer != "" {
				tWrite(t, filepath.Join(pd, "link_layer"), p.linkLayer)
			}
			tWrite(t, filepath.Join(pd, "gids/0"), tGID(p.gid))
			tWrite(t, filepath.Join(pd, "pkeys/0"), "0xffff")
			if !p.noUmad {
				ud := filepath.Join(root, "class/infiniband_mad", fmt.Sprintf("umad%d", umad))
				tWrite(t, filepath.Join(ud, "ibdev"), ca.name)
				tWrite(t, filepath.Join(ud, "port"), fmt.Sprint(p.num))
				umad++
			}
		}
	}
	return root
}

// tEnv is a sysfs tree plus a fake umad fabric with one fake port per umad
// node, wired together, and a Host that opens the fakes.
type tEnv struct {
	host  *Host
	fab   *umadmodel.Fabric
	ports map[string]*umadmodel.Port // by "ca/port"
	files []*umadmodel.File
}

func newEnv(t testing.TB, cas ...tCA) *tEnv {
	t.Helper()
	return newEnvWith(t, nil, cas...)
}

// newEnvWith is newEnv with a change to every fake port's configuration.
func newEnvWith(t testing.TB, mod func(*umadmodel.PortConfig), cas ...tCA) *tEnv {
	t.Helper()
	root := tSysfs(t, "5", cas...)
	e := &tEnv{fab: umadmodel.NewFabric(), ports: map[string]*umadmodel.Port{}}
	byDev := map[string]*umadmodel.Port{}
	umad := 0
	for _, ca := range cas {
		for _, p := range ca.ports {
			if p.noUmad {
				continue
			}
			dev := fmt.Sprintf("/dev/infiniband/umad%d", umad)
			umad++
			ll := umadmodel.InfiniBand
			if p.linkLayer == linkEthernet {
				ll = umadmodel.Ethernet
			}
			cfg := umadmodel.PortConfig{CA: ca.name, Port: p.num, Device: dev, LinkLayer: ll, LID: p.lid, GID: p.gid}
			if mod != nil {
				mod(&cfg)
			}
			fp := e.fab.AddPort(cfg)
			byDev[dev] = fp
			e.ports[fmt.Sprintf("%s/%d", ca.name, p.num)] = fp
		}
	}
	e.host = &Host{Sysfs: tFS(t, root)}
	e.host.open = func(path string) (*sys.FD, error) {
		fp := byDev[path]
		if fp == nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: os.ErrNotExist}
		}
		f, fd, err := fp.Open()
		if err != nil {
			return nil, err
		}
		e.files = append(e.files, f)
		return fd, nil
	}
	t.Cleanup(func() {
		for name, fp := range e.ports {
			if n := fp.OpenFiles(); n != 0 {
				t.Errorf("%s: %d umad files left open", name, n)
			}
		}
	})
	return e
}

// open opens a port of the environment, closed with the test.
func (e *tEnv) open(t testing.TB, ca string, port int) *Port {
	t.Helper()
	p, err := e.host.OpenPort(ca, port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// rxePair is two RoCE CAs like the VM's rxe0 and rxe1.
func rxePair() []tCA {
	return []tCA{
		{name: "rxe0", guid: 0xacade8fffe375f42, ports: []tPort{roce(1, active, linkUp, 0x42)}},
		{name: "rxe1", guid: 0xacdf59fffef0895d, ports: []tPort{roce(1, active, linkUp, 0x5d)}},
	}
}

// ibPair is two InfiniBand CAs, LIDs 1 and 2.
func ibPair() []tCA {
	return []tCA{
		{name: "mlx5_0", guid: 0x0002c90300000001, ports: []tPort{ib(1, active, linkUp, 1)}},
		{name: "mlx5_1", guid: 0x0002c90300000002, ports: []tPort{ib(1, active, linkUp, 2)}},
	}
}
