package rdmatool

import (
	"testing"

	"github.com/purerdma/rdma/rdmanl"
)

type fakeStatNetlink struct{}

func (fakeStatNetlink) Devices() ([]rdmanl.Device, error) {
	return []rdmanl.Device{{Index: 0, Name: "rxe0", NumPorts: 1}, {Index: 2, Name: "mock0", NumPorts: 1}}, nil
}

func (fakeStatNetlink) PortStats(idx uint32, port int) (*rdmanl.Stats, error) {
	if idx == 0 {
		return &rdmanl.Stats{Device: "rxe0", Port: port, Counters: []rdmanl.NamedCounter{{Name: "sent_pkts", Value: 5}, {Name: "rcvd_pkts", Value: 6}}}, nil
	}
	return &rdmanl.Stats{Device: "mock0", Index: 2, Port: port, Counters: []rdmanl.NamedCounter{{Name: "out_of_buffer", Value: 20}}}, nil
}

func (fakeStatNetlink) QPCounters(idx uint32) ([]rdmanl.QPCounter, error) {
	if idx == 0 {
		return nil, nil
	}
	typ, pid, kern := uint8(8), uint32(4242), "ib_core_kernel_user_x"
	return []rdmanl.QPCounter{
		{Device: "mock0", Index: 2, Port: 1, ID: 1, Mode: 1, QPType: &typ, PID: &pid, Counters: []rdmanl.NamedCounter{{Name: "out_of_buffer", Value: 20}}, QPNs: []uint32{257, 258}},
		{Device: "mock0", Index: 2, Port: 1, ID: 2, Mode: 2, KernName: &kern, Counters: []rdmanl.NamedCounter{{Name: "out_of_buffer", Value: 0}}, QPNs: []uint32{259}},
	}, nil
}

func (fakeStatNetlink) CounterMode(idx, port uint32) (*rdmanl.PortCounterMode, error) {
	if idx == 0 {
		return &rdmanl.PortCounterMode{Device: "rxe0", Port: port}, nil
	}
	mask := uint32(3)
	return &rdmanl.PortCounterMode{Device: "mock0", Index: 2, Port: port, Mode: 1, Mask: &mask}, nil
}

// The lines of rdma/stat.c: stat_show_parse_cb, res_counter_line,
// qp_link_get_mode_parse_cb.
func TestStatisticText(t *testing.T) {
	env := &Env{Statistic: fakeStatNetlink{}, Comm: func(pid uint32) (string, bool) { return "rdma_exporter", pid == 4242 }}
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{nil, "link rxe0/1 sent_pkts 5 rcvd_pkts 6 \nlink mock0/1 out_of_buffer 20 \n", 0},
		{[]string{"show", "link", "mock0/1"}, "link mock0/1 out_of_buffer 20 \n", 0},
		{[]string{"qp"}, "link mock0/1 cntn 1 qp-type RAW_PACKET pid 4242 comm rdma_exporter out_of_buffer 20 \n    LQPN: <257,258>\n" +
			"link mock0/1 cntn 2 comm [ib_core_kernel_u out_of_buffer 0 \n    LQPN: <259>\n", 0},
		{[]string{"qp", "mode"}, "link rxe0/1 mode qp auto off \nlink mock0/1 mode qp auto type,pid on \n", 0},
		{[]string{"qp", "mode", "link", "rxe0/1"}, "link rxe0/1 mode qp auto off \n", 0},
		{[]string{"show", "link", "nosuch/1"}, "", 1},
		{[]string{"show", "link", "mock0/9"}, "", 1},
		{[]string{"show", "link", "mock0"}, "link mock0/1 out_of_buffer 20 \n", 0},
		{[]string{"show", "link", "mock0/x"}, "", 1},
		{[]string{"show", "link", "mock0/1", "extra"}, "link mock0/1 out_of_buffer 20 \n", 0},
		{[]string{"show", "bogus"}, "", 0},
		{[]string{"qp", "bogus"}, "", 0},
		{[]string{"bogus"}, "", 0},
		{[]string{"qp", "show", "link", "mock0/1", "cntn", "1"}, "", 1},
		{[]string{"-j", "qp", "show", "link", "mock0/1"}, `[{"ifindex":2,"ifname":"mock0","port":1,"cntn":1,"qp-type":"RAW_PACKET","pid":4242,"comm":"rdma_exporter","out_of_buffer":20,"lqpn":[257,258]},` +
			`{"ifindex":2,"ifname":"mock0","port":1,"cntn":2,"comm":"ib_core_kernel_user_x","out_of_buffer":0,"lqpn":[259]}]` + "\n", 0},
		{[]string{"-j", "show", "link", "rxe0/1"}, `[{"ifname":"rxe0","port":1,"sent_pkts":5,"rcvd_pkts":6}]` + "\n", 0},
		{[]string{"-j", "qp", "mode", "link", "mock0/1"}, `[{"ifindex":2,"ifname":"mock0","port":1,"mode":"qp auto type,pid on"}]` + "\n", 0},
		{[]string{"-j", "show", "link", "nosuch/1"}, "[]\n", 1},
	} {
		out, _, code := runTool(env, append([]string{"statistic"}, tc.args...)...)
		if out != tc.want || code != tc.code {
			t.Errorf("statistic %v: exit %d\n%q\nwant exit %d\n%q", tc.args, code, out, tc.code, tc.want)
		}
	}
}
