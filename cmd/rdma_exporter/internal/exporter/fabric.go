package exporter

// The fabric mode: from one port, discover the fabric (umad/netdisc) and
// read every cabled port's PMA counters over the fabric (PerfMgmt Gets to
// each port's LID, many in flight), with the metric names and labels of
// treydock/infiniband_exporter (its switch and hca collectors):
// infiniband_switch_port_*_total and infiniband_hca_port_*_total with
// labels guid and port, infiniband_switch_info / infiniband_hca_info with
// the node's name and LID. GUIDs are written "0x%016x".

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/purerdma/rdma/umad"
	"github.com/purerdma/rdma/umad/netdisc"
)

// SourceFabric is the fabric mode's source: on only with Config.Fabric.
const SourceFabric = "fabric"

// FabricConfig turns the fabric mode on.
type FabricConfig struct {
	// Open opens the port the scan starts from (umad.OpenPort, or
	// umad.OpenSimPort on an ibsim fabric).
	Open func() (*umad.Port, error)
	// MaxOutstanding is how many MADs are in flight (default 64);
	// Timeout and Retries are each MAD's (default 200 ms, 3).
	MaxOutstanding int
	Timeout        time.Duration
	Retries        int
}

// fabricCounters are the counters of infiniband_exporter's collectors,
// by metric suffix, with where they are read from: PortCountersExtended
// (ext) for data and packets, PortCounters for the errors.
var fabricCounters = []struct {
	suffix, help string
	ext          bool
	get          func(pc *umad.PortCounters, x *umad.PortCountersExtended) uint64
}{
	{"port_transmit_data_bytes_total", "PortXmitData, in octets", true, func(_ *umad.PortCounters, x *umad.PortCountersExtended) uint64 { return x.XmitDataOctets() }},
	{"port_receive_data_bytes_total", "PortRcvData, in octets", true, func(_ *umad.PortCounters, x *umad.PortCountersExtended) uint64 { return x.RcvDataOctets() }},
	{"port_transmit_packets_total", "PortXmitPkts", true, func(_ *umad.PortCounters, x *umad.PortCountersExtended) uint64 { return x.PortXmitPkts }},
	{"port_receive_packets_total", "PortRcvPkts", true, func(_ *umad.PortCounters, x *umad.PortCountersExtended) uint64 { return x.PortRcvPkts }},
	{"port_unicast_transmit_packets_total", "PortUnicastXmitPkts", true, func(_ *umad.PortCounters, x *umad.PortCountersExtended) uint64 { return x.PortUnicastXmitPkts }},
	{"port_unicast_receive_packets_total", "PortUnicastRcvPkts", true, func(_ *umad.PortCounters, x *umad.PortCountersExtended) uint64 { return x.PortUnicastRcvPkts }},
	{"port_multicast_transmit_packets_total", "PortMulticastXmitPkts", true, func(_ *umad.PortCounters, x *umad.PortCountersExtended) uint64 { return x.PortMulticastXmitPkts }},
	{"port_multicast_receive_packets_total", "PortMulticastRcvPkts", true, func(_ *umad.PortCounters, x *umad.PortCountersExtended) uint64 { return x.PortMulticastRcvPkts }},
	{"port_symbol_error_total", "SymbolErrorCounter", false, func(p *umad.PortCounters, _ *umad.PortCountersExtended) uint64 { return uint64(p.SymbolErrorCounter) }},
	{"port_link_error_recovery_total", "LinkErrorRecoveryCounter", false, func(p *umad.PortCounters, _ *umad.PortCountersExtended) uint64 {
		return uint64(p.LinkErrorRecoveryCounter)
	}},
	{"port_link_downed_total", "LinkDownedCounter", false, func(p *umad.PortCounters, _ *umad.PortCountersExtended) uint64 { return uint64(p.LinkDownedCounter) }},
	{"port_receive_errors_total", "PortRcvErrors", false, func(p *umad.PortCounters, _ *umad.PortCountersExtended) uint64 { return uint64(p.PortRcvErrors) }},
	{"port_receive_remote_physical_errors_total", "PortRcvRemotePhysicalErrors", false, func(p *umad.PortCounters, _ *umad.PortCountersExtended) uint64 {
		return uint64(p.PortRcvRemotePhysicalErrors)
	}},
	{"port_receive_switch_relay_errors_total", "PortRcvSwitchRelayErrors", false, func(p *umad.PortCounters, _ *umad.PortCountersExtended) uint64 {
		return uint64(p.PortRcvSwitchRelayErrors)
	}},
	{"port_transmit_discards_total", "PortXmitDiscards", false, func(p *umad.PortCounters, _ *umad.PortCountersExtended) uint64 { return uint64(p.PortXmitDiscards) }},
	{"port_transmit_constraint_errors_total", "PortXmitConstraintErrors", false, func(p *umad.PortCounters, _ *umad.PortCountersExtended) uint64 {
		return uint64(p.PortXmitConstraintErrors)
	}},
	{"port_receive_constraint_errors_total", "PortRcvConstraintErrors", false, func(p *umad.PortCounters, _ *umad.PortCountersExtended) uint64 {
		return uint64(p.PortRcvConstraintErrors)
	}},
	{"port_local_link_integrity_errors_total", "LocalLinkIntegrityErrors", false, func(p *umad.PortCounters, _ *umad.PortCountersExtended) uint64 {
		return uint64(p.LocalLinkIntegrityErrors)
	}},
	{"port_excessive_buffer_overrun_errors_total", "ExcessiveBufferOverrunErrors", false, func(p *umad.PortCounters, _ *umad.PortCountersExtended) uint64 {
		return uint64(p.ExcessiveBufferOverrunErrors)
	}},
	{"port_vl15_dropped_total", "VL15Dropped", false, func(p *umad.PortCounters, _ *umad.PortCountersExtended) uint64 { return uint64(p.VL15Dropped) }},
	{"port_transmit_wait_total", "PortXmitWait", false, func(p *umad.PortCounters, _ *umad.PortCountersExtended) uint64 { return uint64(p.PortXmitWait) }},
	{"port_qp1_dropped_total", "QP1Dropped", false, func(p *umad.PortCounters, _ *umad.PortCountersExtended) uint64 { return uint64(p.QP1Dropped) }},
}

// fabricDescs are the descriptors by subsystem ("switch", "hca") and
// counter index; then the info metrics.
var (
	fabricDescs = sync.OnceValue(func() map[string][]*prometheus.Desc {
		m := map[string][]*prometheus.Desc{}
		for _, sub := range []string{"switch", "hca"} {
			for _, c := range fabricCounters {
				m[sub] = append(m[sub], prometheus.NewDesc("infiniband_"+sub+"_"+c.suffix,
					"Infiniband "+sub+" port "+c.help, []string{"guid", "port"}, nil))
			}
		}
		return m
	})
	descSwitchInfo = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc("infiniband_switch_info", "Infiniband switch information", []string{"guid", "switch", "lid"}, nil)
	})
	descHCAInfo = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc("infiniband_hca_info", "Infiniband HCA information", []string{"guid", "hca", "lid"}, nil)
	})
)

// pmaTarget is one port whose counters are read.
type pmaTarget struct {
	node *netdisc.Node
	port int
	lid  uint16
	pc   umad.PortCounters
	ext  umad.PortCountersExtended
	got  int // answers received (2 when both came)
}

func (e *Exporter) collectFabric(ch chan<- prometheus.Metric) error {
	fc := e.cfg.Fabric
	p, err := fc.Open()
	if err != nil {
		return err
	}
	defer p.Close()
	timeout, retries, window := fc.Timeout, fc.Retries, fc.MaxOutstanding
	if timeout <= 0 {
		timeout = 200 * time.Millisecond
	}
	if retries <= 0 {
		retries = 3
	}
	if window <= 0 {
		window = 64
	}
	ctx := context.Background()
	f, err := netdisc.Discover(ctx, p, netdisc.Options{MaxOutstanding: window, Timeout: timeout, Retries: retries})
	if err != nil {
		return err
	}
	var targets []*pmaTarget
	for _, n := range f.Nodes {
		desc := descHCAInfo()
		if n.Type == netdisc.TypeSwitch {
			desc = descSwitchInfo()
		}
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, 1, guidLabel(n.GUID), n.Desc, strconv.Itoa(int(n.SMALID)))
		for _, pt := range n.Ports[1:] {
			if pt == nil || pt.Remote == nil {
				continue
			}
			lid := pt.BaseLID
			if n.Type == netdisc.TypeSwitch {
				lid = n.SMALID
			}
			if lid != 0 {
				targets = append(targets, &pmaTarget{node: n, port: pt.Num, lid: lid})
			}
		}
	}
	failed, err := readPMA(ctx, p, targets, window, timeout, retries)
	if err != nil {
		return err
	}
	for _, t := range targets {
		if t.got != 2 {
			continue
		}
		sub := "hca"
		if t.node.Type == netdisc.TypeSwitch {
			sub = "switch"
		}
		guid, port := guidLabel(t.node.GUID), strconv.Itoa(t.port)
		for i, c := range fabricCounters {
			ch <- prometheus.MustNewConstMetric(fabricDescs()[sub][i], prometheus.CounterValue, float64(c.get(&t.pc, &t.ext)), guid, port)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d ports' PMAs did not answer", failed, len(targets))
	}
	return nil
}

func guidLabel(g uint64) string { return fmt.Sprintf("0x%016x", g) }

// readPMA reads PortCounters and PortCountersExtended of every target,
// window MADs in flight, and returns how many targets lack an answer.
func readPMA(ctx context.Context, p *umad.Port, targets []*pmaTarget, window int, timeout time.Duration, retries int) (int, error) {
	agent, err := p.Register(umad.ClassPerfMgmt, umad.PerfClassVersion, umad.MethodMask{})
	if err != nil {
		return 0, err
	}
	defer p.Unregister(agent)
	type req struct {
		t   *pmaTarget
		ext bool
	}
	var queue []req
	for _, t := range targets {
		queue = append(queue, req{t, false}, req{t, true})
	}
	flight := map[uint32]req{}
	pkt := umad.NewPacket()
	var tid uint32
	for len(queue) > 0 || len(flight) > 0 {
		for len(queue) > 0 && len(flight) < window {
			r := queue[0]
			queue = queue[1:]
			tid++
			var a umad.Attribute = &umad.PortCounters{PortSelect: uint8(r.t.port)}
			attr := umad.PMAttrPortCounters
			if r.ext {
				a, attr = &umad.PortCountersExtended{PortSelect: uint8(r.t.port)}, umad.PMAttrPortCountersExtended
			}
			m := umad.PerfMAD{Header: umad.NewMADHeader(umad.ClassPerfMgmt, umad.MethodGet, attr, 0, uint64(tid))}
			if err := m.SetAttribute(a); err != nil {
				return 0, err
			}
			if err := pkt.SetMAD(m.Append(pkt.MAD()[:0])); err != nil {
				return 0, err
			}
			if err := pkt.SetAddr(r.t.lid, 1, 0, umad.QP1QKey); err != nil {
				return 0, err
			}
			if err := p.Send(agent, pkt, timeout, retries); err != nil {
				return 0, err
			}
			flight[tid] = r
		}
		rctx, cancel := context.WithTimeout(ctx, time.Duration(retries+1)*timeout+time.Second)
		_, err := p.RecvContext(rctx, pkt)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				break // the kernel (model) reported nothing back: give up on the rest
			}
			return 0, err
		}
		mad := pkt.MAD()
		if len(mad) < 24 {
			continue
		}
		id := uint32(binary.BigEndian.Uint64(mad[8:16]))
		r, ok := flight[id]
		if !ok {
			continue
		}
		delete(flight, id)
		var resp umad.PerfMAD
		if pkt.TimedOut() || resp.Decode(mad[:min(len(mad), umad.MADSize)]) != nil || resp.Header.Status != 0 {
			continue
		}
		var derr error
		if r.ext {
			derr = r.t.ext.Decode(resp.Data[:])
		} else {
			derr = r.t.pc.Decode(resp.Data[:])
		}
		if derr == nil {
			r.t.got++
		}
	}
	failed := 0
	for _, t := range targets {
		if t.got != 2 {
			failed++
		}
	}
	return failed, nil
}
