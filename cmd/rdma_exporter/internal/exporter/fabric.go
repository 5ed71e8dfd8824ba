package exporter

// The fabric mode (Config.Fabric, --collector.fabric; docs/exporter.md,
// "Fabric mode"): from one port, discover the fabric (umad/netdisc) and
// read every cabled port's PMA counters over the fabric (PerfMgmt Gets
// to each port's LID, many in flight), exported as
// treydock/infiniband_exporter (0.10) exports them with its switch and
// hca collectors on: the same series names, label sets, label values,
// help texts and types, and the values its ibnetdiscover --ports and
// perfquery -l -x runs give.
//
// What infiniband_exporter sees is reproduced, not its code: a device is
// a port GUID of ibnetdiscover --ports (a switch, or one HCA port); its
// counters come from PortCountersExtended and follow the PMA's
// ClassPortInfo as perfquery -x does (the unicast and multicast counters
// where CapabilityMask has the extended width bit, the error counters
// where CapabilityMask2 has AdditionalPortCountersExtended). Where the
// PMA lacks the latter, the error counters come from PortCounters
// instead: series infiniband_exporter leaves out (docs/exporter.md lists
// this and the other differences).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/purerdma/rdma/cmd/internal/linkspeed"
	"github.com/purerdma/rdma/umad"
	"github.com/purerdma/rdma/umad/netdisc"
)

// SourceFabric is the fabric mode's source: on only with Config.Fabric.
const SourceFabric = "fabric"

// FabricConfig turns the fabric mode on.
type FabricConfig struct {
	// Open opens the port the scan starts from (umad.OpenPort, or
	// umad.OpenSimPortContext on an ibsim fabric), giving up when ctx,
	// bounded by DiscoverTimeout, is done.
	Open func(ctx context.Context) (*umad.Port, error)
	// MaxOutstanding is how many MADs are in flight (default 64);
	// Timeout and Retries are each MAD's (default 200 ms, 3).
	MaxOutstanding int
	Timeout        time.Duration
	Retries        int
	// DiscoverTimeout bounds the discovery (default 20 s, the default of
	// infiniband_exporter's --ibnetdiscover.timeout); a discovery cut
	// short by it counts in infiniband_exporter_collect_timeouts.
	DiscoverTimeout time.Duration
}

// The collectors of infiniband_exporter whose series the fabric mode
// makes: the label "collector" of its infiniband_exporter_* series.
const (
	collectorDiscover = "ibnetdiscover"
	collectorSwitch   = "switch"
	collectorHCA      = "hca"
)

// Which ClassPortInfo capability a counter of PortCountersExtended needs.
const (
	extBase  = iota // always there: the data and packet counters
	extWidth        // CapabilityMask PMCapExtendedWidth: unicast, multicast
	extErrs         // CapabilityMask2 AdditionalPortCountersExtended
)

// fabricCounter is one counter series: perfquery's field name (the help
// text is "Infiniband switch port " or "Infiniband HCA port " and it),
// the metric suffix, and where the value comes from.
type fabricCounter struct {
	field, suffix string
	need          int
	ext           func(x *umad.PortCountersExtended) float64
	// pc reads the counter from PortCounters, where the PMA's
	// PortCountersExtended lacks the error counters; nil for the
	// counters that always come from PortCountersExtended. pcCap is the
	// CapabilityMask bit PortCounters needs for it, 0 for none.
	pc    func(p *umad.PortCounters) float64
	pcCap uint16
}

// fabricCounters are infiniband_exporter's counters, in its order. The
// data counters count 4-octet words: the series are in octets (× 4), as
// infiniband_exporter multiplies perfquery's *Data fields.
var fabricCounters = []fabricCounter{
	{"PortXmitData", "port_transmit_data_bytes_total", extBase, func(x *umad.PortCountersExtended) float64 { return float64(x.PortXmitData) * 4 }, nil, 0},
	{"PortRcvData", "port_receive_data_bytes_total", extBase, func(x *umad.PortCountersExtended) float64 { return float64(x.PortRcvData) * 4 }, nil, 0},
	{"PortXmitPkts", "port_transmit_packets_total", extBase, func(x *umad.PortCountersExtended) float64 { return float64(x.PortXmitPkts) }, nil, 0},
	{"PortRcvPkts", "port_receive_packets_total", extBase, func(x *umad.PortCountersExtended) float64 { return float64(x.PortRcvPkts) }, nil, 0},
	{"PortUnicastXmitPkts", "port_unicast_transmit_packets_total", extWidth, func(x *umad.PortCountersExtended) float64 { return float64(x.PortUnicastXmitPkts) }, nil, 0},
	{"PortUnicastRcvPkts", "port_unicast_receive_packets_total", extWidth, func(x *umad.PortCountersExtended) float64 { return float64(x.PortUnicastRcvPkts) }, nil, 0},
	{"PortMulticastXmitPkts", "port_multicast_transmit_packets_total", extWidth, func(x *umad.PortCountersExtended) float64 { return float64(x.PortMulticastXmitPkts) }, nil, 0},
	{"PortMulticastRcvPkts", "port_multicast_receive_packets_total", extWidth, func(x *umad.PortCountersExtended) float64 { return float64(x.PortMulticastRcvPkts) }, nil, 0},
	{"SymbolErrorCounter", "port_symbol_error_total", extErrs,
		func(x *umad.PortCountersExtended) float64 { return float64(x.SymbolErrorCounter) },
		func(p *umad.PortCounters) float64 { return float64(p.SymbolErrorCounter) }, 0},
	{"LinkErrorRecoveryCounter", "port_link_error_recovery_total", extErrs,
		func(x *umad.PortCountersExtended) float64 { return float64(x.LinkErrorRecoveryCounter) },
		func(p *umad.PortCounters) float64 { return float64(p.LinkErrorRecoveryCounter) }, 0},
	{"LinkDownedCounter", "port_link_downed_total", extErrs,
		func(x *umad.PortCountersExtended) float64 { return float64(x.LinkDownedCounter) },
		func(p *umad.PortCounters) float64 { return float64(p.LinkDownedCounter) }, 0},
	{"PortRcvErrors", "port_receive_errors_total", extErrs,
		func(x *umad.PortCountersExtended) float64 { return float64(x.PortRcvErrors) },
		func(p *umad.PortCounters) float64 { return float64(p.PortRcvErrors) }, 0},
	{"PortRcvRemotePhysicalErrors", "port_receive_remote_physical_errors_total", extErrs,
		func(x *umad.PortCountersExtended) float64 { return float64(x.PortRcvRemotePhysicalErrors) },
		func(p *umad.PortCounters) float64 { return float64(p.PortRcvRemotePhysicalErrors) }, 0},
	{"PortRcvSwitchRelayErrors", "port_receive_switch_relay_errors_total", extErrs,
		func(x *umad.PortCountersExtended) float64 { return float64(x.PortRcvSwitchRelayErrors) },
		func(p *umad.PortCounters) float64 { return float64(p.PortRcvSwitchRelayErrors) }, 0},
	{"PortXmitDiscards", "port_transmit_discards_total", extErrs,
		func(x *umad.PortCountersExtended) float64 { return float64(x.PortXmitDiscards) },
		func(p *umad.PortCounters) float64 { return float64(p.PortXmitDiscards) }, 0},
	{"PortXmitConstraintErrors", "port_transmit_constraint_errors_total", extErrs,
		func(x *umad.PortCountersExtended) float64 { return float64(x.PortXmitConstraintErrors) },
		func(p *umad.PortCounters) float64 { return float64(p.PortXmitConstraintErrors) }, 0},
	{"PortRcvConstraintErrors", "port_receive_constraint_errors_total", extErrs,
		func(x *umad.PortCountersExtended) float64 { return float64(x.PortRcvConstraintErrors) },
		func(p *umad.PortCounters) float64 { return float64(p.PortRcvConstraintErrors) }, 0},
	{"LocalLinkIntegrityErrors", "port_local_link_integrity_errors_total", extErrs,
		func(x *umad.PortCountersExtended) float64 { return float64(x.LocalLinkIntegrityErrors) },
		func(p *umad.PortCounters) float64 { return float64(p.LocalLinkIntegrityErrors) }, 0},
	{"ExcessiveBufferOverrunErrors", "port_excessive_buffer_overrun_errors_total", extErrs,
		func(x *umad.PortCountersExtended) float64 { return float64(x.ExcessiveBufferOverrunErrors) },
		func(p *umad.PortCounters) float64 { return float64(p.ExcessiveBufferOverrunErrors) }, 0},
	{"VL15Dropped", "port_vl15_dropped_total", extErrs,
		func(x *umad.PortCountersExtended) float64 { return float64(x.VL15Dropped) },
		func(p *umad.PortCounters) float64 { return float64(p.VL15Dropped) }, 0},
	{"PortXmitWait", "port_transmit_wait_total", extErrs,
		func(x *umad.PortCountersExtended) float64 { return float64(x.PortXmitWait) },
		func(p *umad.PortCounters) float64 { return float64(p.PortXmitWait) }, umad.PMCapPortCountersXmitWait},
	{"QP1Dropped", "port_qp1_dropped_total", extErrs,
		func(x *umad.PortCountersExtended) float64 { return float64(x.QP1Dropped) },
		func(p *umad.PortCounters) float64 { return float64(p.QP1Dropped) }, umad.PMCapQP1Dropped},
}

// fabricKind is one of infiniband_exporter's two port collectors and its
// descriptors.
type fabricKind struct {
	collector string // "switch", "hca"
	counters  []*prometheus.Desc
	info      *prometheus.Desc // guid, switch|hca, lid
	duration  *prometheus.Desc // guid, collector
	errorDesc *prometheus.Desc // guid, collector
	timeout   *prometheus.Desc // guid, collector
	rate      *prometheus.Desc // switch: guid, port; hca: guid
	rawRate   *prometheus.Desc
	uplink    *prometheus.Desc
}

type fabricDescSet struct {
	sw, hca                   fabricKind
	collectErrors, collectTOs *prometheus.Desc // collector
	collectDuration           *prometheus.Desc // collector
}

var fabricDescs = sync.OnceValue(func() *fabricDescSet {
	// kind makes a collector's descriptors: sub is its name, human the
	// word its help texts use, rate the name part of its rate series,
	// which are per port on a switch and per device (an HCA port) on an
	// HCA.
	kind := func(sub, human, rate string, rateLabels []string) fabricKind {
		k := fabricKind{collector: sub}
		name := func(s string) string { return "infiniband_" + sub + "_" + s }
		port := []string{"guid", "port"}
		for _, c := range fabricCounters {
			k.counters = append(k.counters, prometheus.NewDesc(name(c.suffix), "Infiniband "+human+" port "+c.field, port, nil))
		}
		k.info = prometheus.NewDesc(name("info"), "Infiniband "+human+" information", []string{"guid", sub, "lid"}, nil)
		k.duration = prometheus.NewDesc(name("collect_duration_seconds"), "Duration of collection", []string{"guid", "collector"}, nil)
		k.errorDesc = prometheus.NewDesc(name("collect_error"), "Indicates if collect error", []string{"guid", "collector"}, nil)
		k.timeout = prometheus.NewDesc(name("collect_timeout"), "Indicates if collect timeout", []string{"guid", "collector"}, nil)
		prefix := strings.TrimSuffix(rate, "rate")
		k.rate = prometheus.NewDesc(name(rate+"_bytes_per_second"), "Infiniband "+human+" "+strings.ReplaceAll(rate, "_", " "), rateLabels, nil)
		k.rawRate = prometheus.NewDesc(name(prefix+"raw_rate_bytes_per_second"), "Infiniband "+human+" "+strings.ReplaceAll(prefix, "_", " ")+"raw rate", rateLabels, nil)
		k.uplink = prometheus.NewDesc(name("uplink_info"), "Infiniband "+human+" uplink information",
			[]string{"guid", "port", sub, "uplink", "uplink_guid", "uplink_type", "uplink_port", "uplink_lid"}, nil)
		return k
	}
	return &fabricDescSet{
		sw:  kind(collectorSwitch, "switch", "port_rate", []string{"guid", "port"}),
		hca: kind(collectorHCA, "HCA", "rate", []string{"guid"}),
		collectErrors: prometheus.NewDesc("infiniband_exporter_collect_errors",
			"Number of errors that occurred during collection", []string{"collector"}, nil),
		collectTOs: prometheus.NewDesc("infiniband_exporter_collect_timeouts",
			"Number of timeouts that occurred during collection", []string{"collector"}, nil),
		collectDuration: prometheus.NewDesc("infiniband_exporter_collector_duration_seconds",
			"Collector time duration.", []string{"collector"}, nil),
	}
})

// fabricDevice is a device of infiniband_exporter: a port GUID of
// ibnetdiscover --ports with its cabled ports (a switch: all its cabled
// ports; an HCA port: itself), addressed at one LID.
type fabricDevice struct {
	sw    bool
	guid  uint64
	name  string
	lid   uint16
	ports []*fabricPort
	// PMA results
	cpi         umad.ClassPortInfo
	failed      bool
	first, last time.Time
}

// fabricPort is one cabled port of a device.
type fabricPort struct {
	pt            *netdisc.Port
	raw, eff      float64 // link rates in bytes/s (rateOK)
	rateOK        bool
	ext           umad.PortCountersExtended
	pc            umad.PortCounters
	extOK, pcOK   bool
	extErr, pcErr error
}

func (e *Exporter) collectFabric(ch chan<- prometheus.Metric) error {
	d := fabricDescs()
	fc := e.cfg.Fabric
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
	discoverTimeout := fc.DiscoverTimeout
	if discoverTimeout <= 0 {
		discoverTimeout = 20 * time.Second
	}
	start := time.Now()
	discovered := func(err error) {
		errs, tos := 0.0, 0.0
		if errors.Is(err, context.DeadlineExceeded) {
			tos = 1
		} else if err != nil {
			errs = 1
		}
		ch <- prometheus.MustNewConstMetric(d.collectErrors, prometheus.GaugeValue, errs, collectorDiscover)
		ch <- prometheus.MustNewConstMetric(d.collectTOs, prometheus.GaugeValue, tos, collectorDiscover)
		ch <- prometheus.MustNewConstMetric(d.collectDuration, prometheus.GaugeValue, time.Since(start).Seconds(), collectorDiscover)
	}
	ctx, cancel := context.WithTimeout(context.Background(), discoverTimeout)
	p, err := fc.Open(ctx)
	if err != nil {
		cancel()
		discovered(err)
		return err
	}
	defer p.Close()
	f, err := netdisc.Discover(ctx, p, netdisc.Options{MaxOutstanding: window, Timeout: timeout, Retries: retries})
	cancel()
	discovered(err)
	if err != nil {
		return err
	}
	devs := fabricDevices(f)
	pmaStart := time.Now()
	pmaErr := readFabricPMA(context.Background(), p, devs, window, timeout, retries)
	failed := 0
	for _, k := range []*fabricKind{&d.sw, &d.hca} {
		n, last := 0, pmaStart
		for _, dev := range devs {
			if dev.sw != (k.collector == collectorSwitch) {
				continue
			}
			if dev.failed {
				n++
			}
			if dev.last.After(last) {
				last = dev.last
			}
			dev.collect(ch, k)
		}
		failed += n
		ch <- prometheus.MustNewConstMetric(d.collectErrors, prometheus.GaugeValue, float64(n), k.collector)
		ch <- prometheus.MustNewConstMetric(d.collectTOs, prometheus.GaugeValue, 0, k.collector)
		ch <- prometheus.MustNewConstMetric(d.collectDuration, prometheus.GaugeValue, last.Sub(pmaStart).Seconds(), k.collector)
	}
	if pmaErr != nil || failed == 0 {
		return pmaErr
	}
	for _, dev := range devs {
		if dev.failed {
			return fmt.Errorf("%d of %d devices' PMAs not read (first: %w)", failed, len(devs), dev.why())
		}
	}
	return nil
}

// collect sends the device's series.
func (dev *fabricDevice) collect(ch chan<- prometheus.Metric, k *fabricKind) {
	guid, lid := guidLabel(dev.guid), strconv.Itoa(int(dev.lid))
	ch <- prometheus.MustNewConstMetric(k.info, prometheus.GaugeValue, 1, guid, dev.name, lid)
	var dur float64
	if !dev.first.IsZero() {
		dur = dev.last.Sub(dev.first).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(k.duration, prometheus.GaugeValue, dur, guid, k.collector)
	ch <- prometheus.MustNewConstMetric(k.timeout, prometheus.GaugeValue, 0, guid, k.collector)
	failed := 0.0
	if dev.failed {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(k.errorDesc, prometheus.GaugeValue, failed, guid, k.collector)
	hcaRate := false
	for _, fp := range dev.ports {
		port := strconv.Itoa(fp.pt.Num)
		if fp.rateOK {
			if dev.sw {
				ch <- prometheus.MustNewConstMetric(k.rate, prometheus.GaugeValue, fp.eff, guid, port)
				ch <- prometheus.MustNewConstMetric(k.rawRate, prometheus.GaugeValue, fp.raw, guid, port)
			} else if !hcaRate {
				hcaRate = true
				ch <- prometheus.MustNewConstMetric(k.rate, prometheus.GaugeValue, fp.eff, guid)
				ch <- prometheus.MustNewConstMetric(k.rawRate, prometheus.GaugeValue, fp.raw, guid)
			}
		}
		r := fp.pt.Remote
		ch <- prometheus.MustNewConstMetric(k.uplink, prometheus.GaugeValue, 1, guid, port, dev.name,
			nodeName(r.Node), guidLabel(r.GUID), nodeTypeLabel(r.Node.Type), strconv.Itoa(r.Num), strconv.Itoa(int(portLID(r))))
		for i, c := range fabricCounters {
			var v float64
			switch {
			case fp.extOK && (c.need == extBase ||
				c.need == extWidth && dev.cpi.CapabilityMask&umad.PMCapExtendedWidth != 0 ||
				c.need == extErrs && dev.cpi.CapabilityMask2&umad.PMCap2AdditionalPortCountersExtended != 0):
				v = c.ext(&fp.ext)
			case fp.pcOK && c.pc != nil && (c.pcCap == 0 || dev.cpi.CapabilityMask&c.pcCap != 0):
				v = c.pc(&fp.pc)
			default:
				continue
			}
			ch <- prometheus.MustNewConstMetric(k.counters[i], prometheus.CounterValue, v, guid, port)
		}
	}
}

// why says why the device was not read.
func (dev *fabricDevice) why() error {
	name := fmt.Sprintf("%s (%s, lid %d)", guidLabel(dev.guid), dev.name, dev.lid)
	if dev.lid == 0 {
		return fmt.Errorf("%s: no LID", name)
	}
	for _, fp := range dev.ports {
		if err := cmpOr(fp.extErr, fp.pcErr); err != nil {
			return fmt.Errorf("%s port %d: %w", name, fp.pt.Num, err)
		}
	}
	return fmt.Errorf("%s: ClassPortInfo not read", name)
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func guidLabel(g uint64) string { return fmt.Sprintf("0x%016x", g) }

// nodeName is the node's name as ibnetdiscover --ports prints it and
// infiniband_exporter reads it back: its NodeDescription with what is
// not printable made a space (clean_nodedesc), spaces trimmed at both
// ends.
func nodeName(n *netdisc.Node) string {
	b := []byte(n.Desc)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = ' '
		}
	}
	return strings.TrimSpace(string(b))
}

// nodeTypeLabel is ibnetdiscover --ports' node type.
func nodeTypeLabel(t uint8) string {
	switch t {
	case netdisc.TypeSwitch:
		return "SW"
	case netdisc.TypeCA:
		return "CA"
	case netdisc.TypeRouter:
		return "RT"
	}
	return "??"
}

// portLID is the LID ibnetdiscover --ports prints for a port: a switch's
// (port 0's), else the port's base LID.
func portLID(pt *netdisc.Port) uint16 {
	if pt.Node.Type == netdisc.TypeSwitch {
		return pt.Node.SMALID
	}
	return pt.BaseLID
}

// fabricDevices groups the cabled ports of the fabric's switches and CAs
// by port GUID, as infiniband_exporter groups the lines of ibnetdiscover
// --ports, in the order of their GUIDs.
func fabricDevices(f *netdisc.Fabric) []*fabricDevice {
	byGUID := map[uint64]*fabricDevice{}
	var devs []*fabricDevice
	for _, n := range f.Nodes {
		if n.Type != netdisc.TypeSwitch && n.Type != netdisc.TypeCA {
			continue
		}
		for _, pt := range n.Ports[1:] {
			if pt == nil || pt.Remote == nil {
				continue
			}
			dev := byGUID[pt.GUID]
			if dev == nil {
				dev = &fabricDevice{sw: n.Type == netdisc.TypeSwitch, guid: pt.GUID, name: nodeName(n), lid: portLID(pt)}
				byGUID[pt.GUID] = dev
				devs = append(devs, dev)
			}
			fp := &fabricPort{pt: pt}
			capInfo := pt
			if dev.sw {
				capInfo = n.Ports[0]
			}
			if capInfo != nil && capInfo.HasInfo && pt.HasInfo {
				fp.raw, fp.eff, fp.rateOK = linkRates(pt.Info[:], capInfo.Info[:])
			}
			dev.ports = append(dev.ports, fp)
		}
	}
	slices.SortFunc(devs, func(a, b *fabricDevice) int { return cmpUint64(a.guid, b.guid) })
	for _, dev := range devs {
		slices.SortFunc(dev.ports, func(a, b *fabricPort) int { return a.pt.Num - b.pt.Num })
	}
	return devs
}

func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// laneRates are infiniband_exporter's lane rates by ibnetdiscover's
// speed name, signalling and effective, in Gb/s.
var laneRates = map[string][2]float64{
	"SDR": {2.5, 2}, "DDR": {5, 4}, "QDR": {10, 8}, "FDR10": {10.3125, 10},
	"FDR": {14.0625, 13.64}, "EDR": {25.78125, 25}, "HDR": {50, 50},
	"NDR": {100, 100}, "XDR": {250, 250},
}

// linkRates returns the raw (signalling) and effective rates of a port
// in bytes/s, as infiniband_exporter computes them from the width and
// speed ibnetdiscover --ports prints (dump_ports_report): capInfo is the
// PortInfo whose capability masks say which extended speed fields count
// (a switch's port 0, an HCA port's own). ok is false where
// ibnetdiscover prints a width or speed infiniband_exporter cannot read
// ("??", "???").
func linkRates(info, capInfo []byte) (raw, eff float64, ok bool) {
	var pi, ci umad.PortInfo
	if pi.Decode(info) != nil || ci.Decode(capInfo) != nil {
		return 0, 0, false
	}
	width := map[uint8]float64{1: 1, 2: 4, 4: 8, 8: 12, 16: 2}[pi.LinkWidthActive]
	lane, ok := laneRates[linkSpeedName(&pi, &ci)]
	if width == 0 || !ok {
		return 0, 0, false
	}
	// infiniband_exporter's parseRate, in its order of operations.
	base := width * 1e9 / 8
	return lane[0] * base, lane[1] * base, true
}

// linkSpeedName is ibnetdiscover --ports' speed: LinkSpeedActive's name,
// or the extended speed's (ibnd_get_agg_linkspeedext) where capInfo has
// extended speeds. FDR10, which libibnetdisc learns from a Mellanox
// vendor attribute netdisc does not read, shows as QDR.
func linkSpeedName(pi, ci *umad.PortInfo) string {
	const (
		capExtSpeeds  = 1 << 14 // PortInfo CapabilityMask IsExtendedSpeedsSupported
		capHasMask2   = 1 << 15 // IsCapabilityMask2Supported
		cap2ExtSpeed2 = 0x0800  // CapabilityMask2 IsExtendedSpeeds2Supported (XDR)
	)
	var espeed int
	if ci.CapabilityMask&capExtSpeeds != 0 {
		espeed = int(pi.LinkSpeedExtActive)
		if ci.CapabilityMask&capHasMask2 != 0 && ci.CapabilityMask2&cap2ExtSpeed2 != 0 {
			if e2 := int(pi.LinkSpeedExtActive2) << 5; e2 != 0 {
				espeed = e2
			}
		}
	}
	if espeed == 0 {
		return linkspeed.Name(uint64(pi.LinkSpeedActive))
	}
	return linkspeed.ExtName(uint64(espeed))
}

// pmaQuery is one PerfMgmt Get.
type pmaQuery struct {
	dev  *fabricDevice
	attr umad.Attribute // what to get (PortSelect set)
	// got decodes the answer's attribute; fail records why none came.
	got  func(data []byte) error
	fail func(err error)
}

// readFabricPMA reads the devices' counters, window MADs in flight:
// every device's ClassPortInfo first (perfquery's first query), then
// PortCountersExtended of each port of the devices that answered, and
// PortCounters too where ClassPortInfo lacks
// AdditionalPortCountersExtended. A device with a query that failed is
// marked failed.
func readFabricPMA(ctx context.Context, p *umad.Port, devs []*fabricDevice, window int, timeout time.Duration, retries int) error {
	agent, err := p.Register(umad.ClassPerfMgmt, umad.PerfClassVersion, umad.MethodMask{})
	if err != nil {
		return err
	}
	defer p.Unregister(agent)
	var qs []*pmaQuery
	cpiOK := map[*fabricDevice]bool{}
	for _, dev := range devs {
		if dev.lid == 0 {
			dev.failed = true
			continue
		}
		qs = append(qs, &pmaQuery{dev: dev, attr: &umad.ClassPortInfo{},
			got: func(b []byte) error {
				if err := dev.cpi.Decode(b); err != nil {
					return err
				}
				cpiOK[dev] = true
				return nil
			},
			fail: func(error) {}})
	}
	if err := runPMA(ctx, p, agent, qs, window, timeout, retries); err != nil {
		return err
	}
	qs = qs[:0]
	for _, dev := range devs {
		if !cpiOK[dev] {
			continue
		}
		addl := dev.cpi.CapabilityMask2&umad.PMCap2AdditionalPortCountersExtended != 0
		for _, fp := range dev.ports {
			qs = append(qs, &pmaQuery{dev: dev, attr: &umad.PortCountersExtended{PortSelect: uint8(fp.pt.Num)},
				got: func(b []byte) error {
					if err := fp.ext.Decode(b); err != nil {
						return err
					}
					fp.extOK = true
					return nil
				},
				fail: func(err error) { fp.extErr = fmt.Errorf("PortCountersExtended: %w", err) }})
			if !addl {
				qs = append(qs, &pmaQuery{dev: dev, attr: &umad.PortCounters{PortSelect: uint8(fp.pt.Num)},
					got: func(b []byte) error {
						if err := fp.pc.Decode(b); err != nil {
							return err
						}
						fp.pcOK = true
						return nil
					},
					fail: func(err error) { fp.pcErr = fmt.Errorf("PortCounters: %w", err) }})
			}
		}
	}
	return runPMA(ctx, p, agent, qs, window, timeout, retries)
}

// runPMA sends the queries, window in flight, each to its device's LID,
// and hands each answer to its query; a query that times out, comes back
// with a MAD status or does not decode marks its device failed.
func runPMA(ctx context.Context, p *umad.Port, agent umad.AgentID, qs []*pmaQuery, window int, timeout time.Duration, retries int) error {
	flight := map[uint32]*pmaQuery{}
	pkt := umad.NewPacket()
	out := make([]byte, 0, umad.MADSize) // each MAD, built, then set in pkt
	var tid uint32
	failed := func(q *pmaQuery, err error) {
		q.dev.failed = true
		q.dev.last = time.Now()
		q.fail(err)
	}
	for len(qs) > 0 || len(flight) > 0 {
		for len(qs) > 0 && len(flight) < window {
			q := qs[0]
			qs = qs[1:]
			tid++
			m := umad.PerfMAD{Header: umad.NewMADHeader(umad.ClassPerfMgmt, umad.MethodGet, q.attr.AttributeID(), 0, uint64(tid))}
			if err := m.SetAttribute(q.attr); err != nil {
				return err
			}
			out = m.Append(out[:0])
			if err := pkt.SetMAD(out); err != nil {
				return err
			}
			if err := pkt.SetAddr(q.dev.lid, 1, 0, umad.QP1QKey); err != nil {
				return err
			}
			if q.dev.first.IsZero() {
				q.dev.first = time.Now()
			}
			if err := p.Send(agent, pkt, timeout, retries); err != nil {
				return err
			}
			flight[tid] = q
		}
		wait := time.Duration(retries+1)*timeout + time.Second
		rctx, cancel := context.WithTimeout(ctx, wait)
		_, err := p.RecvContext(rctx, pkt)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				err = fmt.Errorf("%d PMA queries in flight and no answer nor timeout for %v", len(flight), wait)
			}
			for _, q := range flight {
				failed(q, err)
			}
			for _, q := range qs {
				failed(q, err)
			}
			return err
		}
		mad := pkt.MAD()
		if len(mad) < 24 {
			continue
		}
		q := flight[uint32(binary.BigEndian.Uint64(mad[8:16]))]
		if q == nil {
			continue
		}
		delete(flight, uint32(binary.BigEndian.Uint64(mad[8:16])))
		var resp umad.PerfMAD
		switch {
		case pkt.TimedOut():
			failed(q, errors.New("no answer"))
		case resp.Decode(mad[:min(len(mad), umad.MADSize)]) != nil:
			failed(q, errors.New("an answer that does not decode"))
		case resp.Header.Status != 0:
			failed(q, fmt.Errorf("MAD status %#04x", uint16(resp.Header.Status)))
		default:
			if err := q.got(resp.Data[:]); err != nil {
				failed(q, err)
				continue
			}
			q.dev.last = time.Now()
		}
	}
	return nil
}
