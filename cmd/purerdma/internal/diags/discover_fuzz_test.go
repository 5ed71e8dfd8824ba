package diags

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/umad/netdisc"
)

// tinyFabric is a switch with a CA on its port 1, as a scan finds them.
func tinyFabric() (*netdisc.Fabric, []*netdisc.Port) {
	sw := &netdisc.Node{GUID: 0x200000, Type: netdisc.TypeSwitch, NumPorts: 2, Desc: "sw", SMALID: 1}
	ca := &netdisc.Node{GUID: 0x100000, Type: netdisc.TypeCA, NumPorts: 1, Desc: "ca\x01"}
	binary.BigEndian.PutUint64(sw.Info[20:], 0x200000)
	binary.BigEndian.PutUint64(ca.Info[20:], 0x100001)
	sw.Ports = []*netdisc.Port{{Node: sw, GUID: 0x200000, HasInfo: true, BaseLID: 1}, {Node: sw, Num: 1, GUID: 0x200000, HasInfo: true, BaseLID: 1}, nil}
	ca.Ports = []*netdisc.Port{nil, {Node: ca, Num: 1, GUID: 0x100001, HasInfo: true, BaseLID: 2}}
	sw.Ports[1].Remote, ca.Ports[1].Remote = ca.Ports[1], sw.Ports[1]
	sw.Ports[0].Info[33] = 0x45 // Active, LinkUp
	ca.Ports[1].Info[32] = 0x04
	f := &netdisc.Fabric{From: ca, FromPort: 1, Nodes: []*netdisc.Node{ca, sw}}
	return f, []*netdisc.Port{ca.Ports[1], sw.Ports[0], sw.Ports[1]}
}

// FuzzNDCache feeds libibnetdisc cache files to parseCache, and what it
// accepts to the printers of ibnetdiscover and iblinkinfo: none panics.
func FuzzNDCache(f *testing.F) {
	fab, ports := tinyFabric()
	good := marshalCache(fab, 1, cachePorts(ports))
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(good[:ndCacheHeader])
	bad := append([]byte(nil), good...)
	bad[ndCacheHeader+77] = 0 // the switch with no ports
	f.Add(bad)
	f.Fuzz(func(t *testing.T, data []byte) {
		lf, err := parseCache(data)
		if err != nil {
			return
		}
		var b strings.Builder
		nd := &netdiscover{w: &b, full: true, group: true, reportHops: true, diffFlags: ndDiffDefault | ndDiffLID | ndDiffDesc}
		nd.topology(lf.f, lf.scan, time.Unix(0, 0))
		nd.diff(lf.f, lf.f)
		for _, n := range lf.f.Nodes {
			nd.portsReport(n)
		}
		li := &linkinfo{w: &b, additional: true, filter: lf.f, diffFlags: liDiffDefault | liDiffLID | liDiffDesc}
		for _, n := range lf.f.Nodes {
			li.printNode(n, "")
		}
		li.diffNodes(nil, lf.f, lf.f)
		li.line = true
		li.diffNodes(nil, lf.f, fab)
		_ = marshalCache(lf.f, lf.scan.maxHops, cachePorts(lf.scan.ports))
	})
}

// FuzzNodeNameMap feeds node name maps to readNodeNameMap: it never panics,
// and a map it accepts names only GUIDs with non-empty names.
func FuzzNodeNameMap(f *testing.F) {
	f.Add("# map\n0x100000 \"ca one\" # c\n  0x200000\tsw\n0x200000 \"dup\"\n\n")
	f.Add("zz \"bad\"\n")
	f.Add("0x1\n0x2 \"\"\n" + strings.Repeat("x", 300) + "\n")
	f.Fuzz(func(t *testing.T, text string) {
		m, bad := readNodeNameMap(strings.NewReader(text))
		if bad != "" {
			return
		}
		for g, name := range m.names {
			if name == "" {
				t.Errorf("GUID %#x with an empty name", g)
			}
		}
	})
}

// TestNDCacheRoundTrip: a cache file read back and written again is the
// same file, as libibnetdisc re-caches a loaded fabric.
func TestNDCacheRoundTrip(t *testing.T) {
	fab, ports := tinyFabric()
	good := marshalCache(fab, 1, cachePorts(ports))
	lf, err := parseCache(good)
	if err != nil {
		t.Fatal(err)
	}
	if again := marshalCache(lf.f, lf.scan.maxHops, cachePorts(lf.scan.ports)); string(again) != string(good) {
		t.Errorf("written again:\n%x\nfirst:\n%x", again, good)
	}
	if _, err := parseCache(good[:len(good)-1]); err == nil {
		t.Error("a short file is accepted")
	}
}
