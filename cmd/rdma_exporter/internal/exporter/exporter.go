// Package exporter is purerdma's Prometheus exporter (cmd/rdma_exporter,
// purerdma exporter): on every scrape it reads the port counters from sysfs
// with node_exporter's infiniband metric names and labels, the
// hw_counters and RDMA netlink statistics (`rdma statistic`), and the
// packets and bytes of the flows a config file lists, each counted by a
// verbs counters object on a flow created with DONT_TRAP. Errors of one
// source never fail the scrape: they show in rdma_exporter_source_up and in
// the log.
package exporter

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/purerdma/rdma/rdmanl"
	"github.com/purerdma/rdma/sysfs"
)

// Sources the exporter collects, each switched on or off.
const (
	SourceInfiniBand = "infiniband" // sysfs: node_exporter's infiniband collector
	SourceHwCounters = "hw_counters"
	SourceNetlink    = "netlink" // RDMA netlink port statistics (rdma statistic)
	SourceFlows      = "flows"   // verbs counters on configured flows
)

// Sources lists every source, in the order they are collected.
var Sources = []string{SourceInfiniBand, SourceHwCounters, SourceNetlink, SourceFlows}

// pmaMetrics maps a counters/ file to node_exporter's metric name (its
// infiniband collector, from procfs's class_infiniband.go), and says
// which are data counters in 4-octet units (sysfs.DataOctets).
var pmaMetrics = map[string]struct {
	name, help string
	octets     bool
}{
	"excessive_buffer_overrun_errors": {"excessive_buffer_overrun_errors_total", "Number of times that OverrunErrors consecutive flow control update periods occurred, each having at least one overrun error.", false},
	"link_downed":                     {"link_downed_total", "Number of times the link failed to recover from an error state and went down", false},
	"link_error_recovery":             {"link_error_recovery_total", "Number of times the link successfully recovered from an error state", false},
	"local_link_integrity_errors":     {"local_link_integrity_errors_total", "Number of times that the count of local physical errors exceeded the threshold specified by LocalPhyErrors.", false},
	"multicast_rcv_packets":           {"multicast_packets_received_total", "Number of multicast packets received (including errors)", false},
	"multicast_xmit_packets":          {"multicast_packets_transmitted_total", "Number of multicast packets transmitted (including errors)", false},
	"port_rcv_constraint_errors":      {"port_constraint_errors_received_total", "Number of packets received on the switch physical port that are discarded", false},
	"port_xmit_constraint_errors":     {"port_constraint_errors_transmitted_total", "Number of packets not transmitted from the switch physical port", false},
	"port_rcv_data":                   {"port_data_received_bytes_total", "Number of data octets received on all links", true},
	"port_xmit_data":                  {"port_data_transmitted_bytes_total", "Number of data octets transmitted on all links", true},
	"port_rcv_discards":               {"port_discards_received_total", "Number of inbound packets discarded by the port because the port is down or congested", false},
	"port_xmit_discards":              {"port_discards_transmitted_total", "Number of outbound packets discarded by the port because the port is down or congested", false},
	"port_rcv_errors":                 {"port_errors_received_total", "Number of packets containing an error that were received on this port", false},
	"port_rcv_packets":                {"port_packets_received_total", "Number of packets received on all VLs by this port (including errors)", false},
	"port_xmit_packets":               {"port_packets_transmitted_total", "Number of packets transmitted on all VLs from this port (including errors)", false},
	"port_xmit_wait":                  {"port_transmit_wait_total", "Number of ticks during which the port had data to transmit but no data was sent during the entire tick", false},
	"unicast_rcv_packets":             {"unicast_packets_received_total", "Number of unicast packets received (including errors)", false},
	"unicast_xmit_packets":            {"unicast_packets_transmitted_total", "Number of unicast packets transmitted (including errors)", false},
	"port_rcv_remote_physical_errors": {"port_receive_remote_physical_errors_total", "Number of packets marked with the EBP (End of Bad Packet) delimiter received on the port.", false},
	"port_rcv_switch_relay_errors":    {"port_receive_switch_relay_errors_total", "Number of packets that could not be forwarded by the switch.", false},
	"symbol_error":                    {"symbol_error_total", "Number of minor link errors detected on one or more physical lanes.", false},
	"VL15_dropped":                    {"vl15_dropped_total", "Number of incoming VL15 packets dropped due to resource limitations.", false},
}

const ns = "node_infiniband_"

// The descriptors are built on first use, not at package init: the
// exporter is a subcommand of the tools' binary, and every other tool
// (ibstat among them) would pay for building them at start-up.
var (
	portLabels = []string{"device", "port"}
	descInfo   = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc(ns+"info", "Non-numeric data from /sys/class/infiniband/<device>, value is always 1.", []string{"device", "board_id", "firmware_version", "hca_type"}, nil)
	})
	descState = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc(ns+"state_id", "State of the InfiniBand port (0: no change, 1: down, 2: init, 3: armed, 4: active, 5: act defer)", portLabels, nil)
	})
	descPhys = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc(ns+"physical_state_id", "Physical state of the InfiniBand port (0: no change, 1: sleep, 2: polling, 3: disable, 4: shift, 5: link up, 6: link error recover, 7: phytest)", portLabels, nil)
	})
	descRate = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc(ns+"rate_bytes_per_second", "Maximum signal transfer rate", portLabels, nil)
	})
	descHw = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc("rdma_hw_stat_total", "A port's hw_counters/ value (/sys/class/infiniband/<device>/ports/<port>/hw_counters/<counter>).", []string{"device", "port", "counter"}, nil)
	})
	descNetlink = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc("rdma_statistic_total", "A port's RDMA netlink statistic, as `rdma statistic show` prints it.", []string{"device", "port", "counter"}, nil)
	})
	descQPStat = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc("rdma_qp_statistic_total", "A QP counter's value (an rdma_counter of `rdma statistic qp show`): it counts for the QPs bound to it, which rdma_qp_counter_qp_info lists.", []string{"device", "port", "counter_id", "counter"}, nil)
	})
	descQPInfo = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc("rdma_qp_counter_qp_info", "A QP bound to a QP counter (an LQPN of `rdma statistic qp show`), value is always 1.", []string{"device", "port", "counter_id", "qpn"}, nil)
	})
	descUp = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc("rdma_exporter_source_up", "1 when the source was read without error in this scrape, 0 when it failed (see the log).", []string{"source"}, nil)
	})
	pmaDescs = sync.OnceValue(func() map[string]*prometheus.Desc {
		m := map[string]*prometheus.Desc{}
		for file, p := range pmaMetrics {
			m[file] = prometheus.NewDesc(ns+p.name, p.help, portLabels, nil)
		}
		return m
	})
)

// Config says what an Exporter collects.
type Config struct {
	// SysfsRoot is where sysfs is mounted; "" means /sys.
	SysfsRoot string
	// Off lists the sources not to collect.
	Off map[string]bool
	// Flows are counted with verbs counters (SourceFlows).
	Flows []FlowConfig
	// Netlink reads the netlink statistics; nil means the running
	// system's (rdmanl.New).
	Netlink StatsSource
	// Logger gets a line per failed source; nil means slog.Default().
	Logger *slog.Logger
	// Fabric turns the fabric mode on (SourceFabric): every port of the
	// fabric, read over the fabric from one port.
	Fabric *FabricConfig
}

// StatsSource reads a port's RDMA netlink statistics.
type StatsSource interface {
	PortStatsByName(device string, port int) (*rdmanl.Stats, error)
}

// QPCounterSource reads a device's QP counters (`rdma statistic qp
// show`); a StatsSource that implements it (rdmanl.Conn does) has them
// exported with the netlink source.
type QPCounterSource interface {
	QPCountersByName(device string) ([]rdmanl.QPCounter, error)
}

// Exporter is a prometheus.Collector over the RDMA devices of a host.
type Exporter struct {
	cfg   Config
	fs    *sysfs.FS
	flows *flowSet
	mu    sync.Mutex // one scrape at a time: the flows' reads and devs share buffers

	devs    devices
	samples samples
}

// New returns an Exporter; with flows configured it creates them (see
// FlowConfig) and Close destroys them.
func New(cfg Config) (*Exporter, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	fs, err := sysfs.New(cfg.SysfsRoot)
	if err != nil {
		return nil, err
	}
	e := &Exporter{cfg: cfg, fs: fs}
	if len(cfg.Flows) > 0 && !cfg.Off[SourceFlows] {
		if e.flows, err = newFlowSet(cfg.Flows, fs); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Close closes the sysfs files the exporter keeps open and destroys the
// configured flows and their counters.
func (e *Exporter) Close() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.devs.close()
	e.devs.watch = nil
	if e.flows == nil {
		return nil
	}
	return e.flows.close()
}

// Describe implements prometheus.Collector; the exporter is unchecked (its
// series depend on the devices present), so it sends nothing.
func (e *Exporter) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector: it reads every source.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.samples.reset()
	var caErr error
	if !e.cfg.Off[SourceInfiniBand] || !e.cfg.Off[SourceHwCounters] || !e.cfg.Off[SourceNetlink] {
		caErr = e.devs.refresh(e.fs)
	}
	cas := e.devs.cas
	for _, src := range Sources {
		if e.cfg.Off[src] {
			continue
		}
		var err error
		switch src {
		case SourceInfiniBand:
			err = errors.Join(caErr, e.collectInfiniBand(ch, cas))
		case SourceHwCounters:
			err = e.collectHw(ch, cas)
		case SourceNetlink:
			err = e.collectNetlink(ch, cas)
		case SourceFlows:
			if e.flows != nil {
				err = e.flows.collect(ch)
			}
		}
		up := 1.0
		if err != nil {
			up = 0
			e.cfg.Logger.Warn("source failed", "source", src, "err", err)
		}
		ch <- prometheus.MustNewConstMetric(descUp(), prometheus.GaugeValue, up, src)
		if err != nil && src != SourceFlows {
			e.devs.stale = true // a device may have gone: discover again next time
		}
	}
	if e.cfg.Fabric != nil && !e.cfg.Off[SourceFabric] {
		err := e.collectFabric(ch)
		up := 1.0
		if err != nil {
			up = 0
			e.cfg.Logger.Warn("source failed", "source", SourceFabric, "err", err)
		}
		ch <- prometheus.MustNewConstMetric(descUp(), prometheus.GaugeValue, up, SourceFabric)
	}
}

func (e *Exporter) collectNetlink(ch chan<- prometheus.Metric, cas []*devState) error {
	nl := e.cfg.Netlink
	if nl == nil {
		if e.cfg.SysfsRoot != "" && e.cfg.SysfsRoot != "/sys" {
			return nil // a fixture tree describes no running system
		}
		// One socket for the scrape's requests; NewNetlink's one a
		// request where it cannot be opened (the requests then fail
		// as they would have).
		if n, err := rdmanl.Open(); err == nil {
			defer n.Close()
			nl = n
		} else {
			nl = rdmanl.New()
		}
	}
	var errs []error
	for _, ds := range cas {
		ca := ds.ca
		for _, p := range ca.Ports {
			st, err := nl.PortStatsByName(ca.Name, p.Number)
			if err != nil {
				if !errors.Is(err, sysfs.ErrNotSupported) && !isEINVAL(err) {
					errs = append(errs, err)
				}
				continue // a device without statistics (no hw counters)
			}
			for _, c := range st.Counters {
				ch <- prometheus.MustNewConstMetric(descNetlink(), prometheus.CounterValue, float64(c.Value), ca.Name, strconv.Itoa(p.Number), c.Name)
			}
		}
		qs, ok := nl.(QPCounterSource)
		if !ok {
			continue
		}
		cs, err := qs.QPCountersByName(ca.Name)
		if err != nil {
			if !errors.Is(err, sysfs.ErrNotSupported) && !isEINVAL(err) && !errors.Is(err, syscall.EOPNOTSUPP) {
				errs = append(errs, err)
			}
			continue
		}
		for _, c := range cs {
			port, id := strconv.FormatUint(uint64(c.Port), 10), strconv.FormatUint(uint64(c.ID), 10)
			for _, hc := range c.Counters {
				ch <- prometheus.MustNewConstMetric(descQPStat(), prometheus.CounterValue, float64(hc.Value), ca.Name, port, id, hc.Name)
			}
			for _, qpn := range c.QPNs {
				ch <- prometheus.MustNewConstMetric(descQPInfo(), prometheus.GaugeValue, 1, ca.Name, port, id, strconv.FormatUint(uint64(qpn), 10))
			}
		}
	}
	return errors.Join(errs...)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ConfigError is a configuration the exporter refuses at start.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

func configErr(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}
