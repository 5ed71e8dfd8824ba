package rdmatool

import (
	"syscall"
	"testing"

	"github.com/purerdma/rdma/rdmanl"
)

type fakeLinks struct {
	devs  []rdmanl.Device
	added []string
}

func (f *fakeLinks) Devices() ([]rdmanl.Device, error) { return f.devs, nil }

func (f *fakeLinks) Port(idx uint32, port int) (*rdmanl.Port, error) {
	for _, d := range f.devs {
		if d.Index == idx {
			nd, ni := "veth"+string(rune('0'+idx)), 10+idx
			return &rdmanl.Port{Index: idx, Device: d.Name, Port: port, State: 4, PhysState: 5, Netdev: &nd, NetdevIndex: &ni}, nil
		}
	}
	return nil, syscall.EINVAL
}

func (f *fakeLinks) LinkAdd(name, typ, netdev string) error {
	if typ != "rxe" {
		return syscall.EINVAL
	}
	for _, d := range f.devs {
		if d.Name == name {
			return syscall.EEXIST
		}
	}
	f.devs = append(f.devs, rdmanl.Device{Index: uint32(len(f.devs)), Name: name})
	f.added = append(f.added, name+" "+netdev)
	return nil
}

func (f *fakeLinks) LinkDelete(idx uint32) error {
	for i, d := range f.devs {
		if d.Index == idx {
			f.devs = append(f.devs[:i], f.devs[i+1:]...)
			return nil
		}
	}
	return syscall.ENODEV
}

// The messages and statuses of rdma link (compared with the real tool in
// TestVMLinkMatchesRdma).
func TestLink(t *testing.T) {
	f := &fakeLinks{devs: []rdmanl.Device{{Index: 0, Name: "rxe0", NumPorts: 1}}}
	env := &Env{Link: f}
	for _, c := range []struct {
		args           []string
		out, err       string
		code           int
		devsAfterwards int
	}{
		{[]string{"link", "add", "rxe1", "type", "rxe", "netdev", "veth1"}, "", "", 0, 2},
		{[]string{"link", "add", "rxe1", "type", "rxe", "netdev", "veth1"}, "", "error: File exists\n", 1, 2},
		{[]string{"link", "add", "x", "type", "foo", "netdev", "veth1"}, "", "error: Invalid argument\n", 1, 2},
		{[]string{"link", "add"}, "", "Please provide a link name to add.\n", 1, 2},
		{[]string{"link", "add", "rxe3", "type", "rxe"}, linkUsage, "", 0, 2},
		{[]string{"link", "delete"}, "", "Please provide device name.\n", 1, 2},
		{[]string{"link", "delete", "nosuch"}, "", "Wrong device name - nosuch\n", 1, 2},
		{[]string{"link", "delete", "rxe1"}, "", "", 0, 1},
		{[]string{"link", "bogus"}, "", "Unknown parameter 'bogus'.\n", 0, 1},
		{[]string{"link"}, "link rxe0/1 state ACTIVE physical_state LINK_UP netdev veth0 \n", "", 0, 1},
		{[]string{"link", "show", "rxe0/1"}, "link rxe0/1 state ACTIVE physical_state LINK_UP netdev veth0 \n", "", 0, 1},
		{[]string{"link", "-j", "show"}, `[{"ifindex":0,"ifname":"rxe0","port":1,"state":"ACTIVE","physical_state":"LINK_UP","netdev":"veth0","netdev_index":10}]` + "\n", "", 0, 1},
		{[]string{"link", "show", "rxe0/2"}, "", "Wrong device name\n", 1, 1},
		{[]string{"link", "show", "rxe0"}, "", "Wrong device name\n", 1, 1},
		{[]string{"link", "show", "nosuch"}, "", "Wrong device name\n", 1, 1},
	} {
		out, errs, code := runTool(env, c.args...)
		if out != c.out || errs != c.err || code != c.code || len(f.devs) != c.devsAfterwards {
			t.Errorf("%v: exit %d, stdout %q, stderr %q, %d devices; want %d %q %q %d", c.args, code, out, errs, len(f.devs), c.code, c.out, c.err, c.devsAfterwards)
		}
	}
	if len(f.added) != 1 || f.added[0] != "rxe1 veth1" {
		t.Errorf("added %v", f.added)
	}
}
