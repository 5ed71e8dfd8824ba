package exporter

import (
	"bytes"
	"testing"

	"github.com/purerdma/rdma/cmd/internal/umadenv"
	"github.com/purerdma/rdma/internal/testmodel/ibsimtest"
	"github.com/purerdma/rdma/umad"
)

// TestFabricMode scrapes the small simulated fabric in fabric mode: every
// cabled port of both switches and the four HCAs, with
// infiniband_exporter's names and labels, an error counter set from
// ibsim's console among them.
func TestFabricMode(t *testing.T) {
	f := ibsimtest.Start(t, ibsimtest.Small, ibsimtest.Options{Console: true})
	if err := f.Console(`PerformanceSet "Switch2"[1] PortCounters.SymbolErrorCounter=42`); err != nil {
		t.Fatal(err)
	}
	off := map[string]bool{}
	for _, s := range Sources {
		off[s] = true
	}
	var log bytes.Buffer
	e, err := New(Config{SysfsRoot: t.TempDir(), Off: off, Logger: newTestLogger(&log),
		Fabric: &FabricConfig{Open: func() (*umad.Port, error) { return umad.OpenSimPort(f.Sock, "Hca1") }}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	m := gather(t, e)
	if up := value(t, m["rdma_exporter_source_up"], map[string]string{"source": "fabric"}); up != 1 {
		t.Fatalf("fabric source down: %s", log.String())
	}
	// Switch1: ports 1, 2, 3, 5 cabled; Switch2 the same; 4 HCAs one each.
	if n := len(m["infiniband_switch_port_symbol_error_total"]); n != 8 {
		t.Errorf("%d switch ports, want 8", n)
	}
	if n := len(m["infiniband_hca_port_transmit_packets_total"]); n != 4 {
		t.Errorf("%d HCA ports, want 4", n)
	}
	sw2 := map[string]string{"guid": "0x0000000000200001", "port": "1"}
	if v := value(t, m["infiniband_switch_port_symbol_error_total"], sw2); v != 42 {
		t.Errorf("Switch2 port 1 SymbolErrorCounter %v, want 42", v)
	}
	if v := value(t, m["infiniband_switch_port_transmit_data_bytes_total"], sw2); v <= 0 {
		t.Errorf("Switch2 port 1 sent %v bytes", v)
	}
	if len(m["infiniband_switch_info"]) != 2 || len(m["infiniband_hca_info"]) != 4 {
		t.Errorf("info: %d switches, %d HCAs", len(m["infiniband_switch_info"]), len(m["infiniband_hca_info"]))
	}
	// --collector.fabric's port: PURERDMA_IBSIM names the ibsim node.
	t.Setenv(umadenv.IBSim, f.Sock+":Hca2")
	p, err := openFabricPort("nosuch", 9)
	if err != nil {
		t.Fatalf("openFabricPort with %s: %v", umadenv.IBSim, err)
	}
	if p.CA() != "Hca2" {
		t.Errorf("openFabricPort with %s=%s:Hca2: CA %q", umadenv.IBSim, f.Sock, p.CA())
	}
	p.Close()
}
