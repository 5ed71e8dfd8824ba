//go:build integration

package diags

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/sysfs"
	"github.com/purerdma/rdma/umad"
)

// TestVMPerfqueryNoPMA: rxe has no PMA. The kernel's MAD layer answers a
// PerfMgmt Get nobody registered for with status 0x000c; perfquery says
// so clearly, at once.
func TestVMPerfqueryNoPMA(t *testing.T) {
	vmtest.Require(t)
	// Without -C the default port would be mock0's where the test device is
	// loaded (libibumad's choice too); it has no umad device.
	for _, args := range [][]string{{"perfquery", "-C", vmtest.Dev0}, {"perfquery", "-x", "-C", "rxe1", "-P", "1"}} {
		var out, errb bytes.Buffer
		start := time.Now()
		err := DefaultEnv().run(append([]string{"purerdma"}, args...), &out, &errb)
		var ee cli.ExitError
		if !errors.As(err, &ee) || ee.Code != 255 || !strings.Contains(errb.String(), "status 0x000c") ||
			!strings.Contains(errb.String(), "the device has no PMA") {
			t.Fatalf("%v: %v\nstdout: %s\nstderr: %s", args, err, out.String(), errb.String())
		}
		t.Logf("%v after %v:\n%s", args, time.Since(start), errb.String())
	}
}

// TestVMPerfqueryNothingAnswers: a PerfMgmt query that nobody answers
// (here an agent on rxe1 takes PerfMgmt Gets and stays silent, like a
// dead PMA) comes back as a timeout error after the retries, not a hang;
// one to a GID whose neighbour does not resolve fails clearly too.
func TestVMPerfqueryNothingAnswers(t *testing.T) {
	vmtest.Require(t)
	silent, err := umad.OpenPort(vmtest.Dev1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if _, err := silent.Register(umad.ClassPerfMgmt, 1, umad.MethodMaskOf(umad.MethodGet)); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	start := time.Now()
	err = DefaultEnv().run([]string{"purerdma", "perfquery", "-C", "rxe1", "-t", "100", "--retries", "2"}, &out, &errb)
	el := time.Since(start)
	var ee cli.ExitError
	if !errors.As(err, &ee) || !strings.Contains(errb.String(), "no response from the PMA") || !strings.Contains(errb.String(), "after 3 tries 100ms apart") {
		t.Fatalf("%v\nstderr: %s", err, errb.String())
	}
	// The kernel's MAD timeout counts jiffies from the send's completion,
	// so a try can end up to a tick (4 ms at Debian's HZ=250) before
	// 100 ms have passed by our clock: 3 tries take a little under 300 ms
	// at the least.
	if el < 270*time.Millisecond || el > 5*time.Second {
		t.Fatalf("took %v; 3 tries × 100 ms expected", el)
	}
	t.Logf("after %v: %s", el, errb.String())

	errb.Reset()
	start = time.Now()
	err = DefaultEnv().run([]string{"purerdma", "perfquery", "-C", "rxe0", "-t", "100", "--retries", "2", "--dgid", "fe80::dead:beef"}, &out, &errb)
	if !errors.As(err, &ee) || !strings.Contains(errb.String(), "neighbour") {
		t.Fatalf("%v\nstderr: %s", err, errb.String())
	}
	t.Logf("unreachable GID, after %v: %s", time.Since(start), errb.String())
}

// TestVMPerfqueryAgainstAPMA: an agent on rxe1 plays the PMA (rxe has
// none), answering ClassPortInfo, PortCounters and PortCountersExtended;
// perfquery on rxe0 reads them over RoCE and prints libibmad's format.
func TestVMPerfqueryAgainstAPMA(t *testing.T) {
	vmtest.Require(t)
	pma, err := umad.OpenPort(vmtest.Dev1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pma.Close()
	agent, err := pma.Register(umad.ClassPerfMgmt, 1, umad.MethodMaskOf(umad.MethodGet))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		pkt := umad.NewPacket()
		for {
			if _, err := pma.Recv(pkt, -1); err != nil {
				return
			}
			var m umad.PerfMAD
			if m.Decode(pkt.MAD()) != nil {
				continue
			}
			m.Header.Method = m.Header.Method.Response()
			switch m.Header.AttributeID {
			case umad.AttrClassPortInfo:
				m.SetAttribute(&umad.ClassPortInfo{BaseVersion: 1, ClassVersion: 1,
					CapabilityMask: umad.PMCapExtendedWidth | umad.PMCapPortCountersXmitWait, CapabilityMask2: umad.PMCap2AdditionalPortCountersExtended})
			case umad.PMAttrPortCounters:
				m.SetAttribute(&umad.PortCounters{PortSelect: 1, PortXmitData: 1234, PortRcvData: 5678, PortXmitPkts: 9, PortRcvPkts: 10, PortXmitWait: 3, SymbolErrorCounter: 2})
			case umad.PMAttrPortCountersExtended:
				m.SetAttribute(&umad.PortCountersExtended{PortSelect: 1, PortXmitData: 1 << 40, PortUnicastRcvPkts: 77, LinkDownedCounter: 4})
			default:
				m.Header.Status = umad.StatusMethodAttrUnsupported
			}
			pkt.SetMAD(m.Append(nil))
			pma.Send(agent, pkt, 0, 0)
		}
	}()
	f, err := sysfs.New("")
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := f.Port(vmtest.Dev1, 1)
	g, _ := p1.GID(0)
	dgid := g.GID.Addr().String()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"perfquery", "-C", "rxe0", "--dgid", dgid, "--retries", "5"}, []string{
			"# Port counters: Lid 0 Gid " + dgid + " port 1 (CapMask: 0x1200)\n",
			"SymbolErrorCounter:..............2\n", "PortXmitData:....................1234\n", "PortXmitWait:....................3\n"}},
		{[]string{"perfquery", "-x", "-C", "rxe0", "--dgid", dgid}, []string{
			"# Port extended counters: Lid 0 Gid " + dgid + " port 1 (CapMask: 0x1200 CapMask2: 0x0000002)\n",
			"PortXmitData:....................1099511627776\n", "PortUnicastRcvPkts:..............77\n", "LinkDownedCounter:...............4\n"}},
	} {
		var out, errb bytes.Buffer
		if err := DefaultEnv().run(append([]string{"purerdma"}, tc.args...), &out, &errb); err != nil {
			t.Fatalf("%v: %v %s", tc.args, err, errb.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: missing %q in\n%s", tc.args, w, out.String())
			}
		}
		t.Logf("%v:\n%s", tc.args, out.String())
	}
}
