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

// The counters_ext/ files of kernels before 4.5 that node_exporter reads,
// with its names (legacy_*).
var legacyMetrics = map[string]struct {
	name, help string
	octets     bool
}{
	"port_multicast_rcv_packets":  {"legacy_multicast_packets_received_total", "Number of multicast packets received", false},
	"port_multicast_xmit_packets": {"legacy_multicast_packets_transmitted_total", "Number of multicast packets transmitted", false},
	"port_rcv_data_64":            {"legacy_data_received_bytes_total", "Number of data octets received on all links", true},
	"port_rcv_packets_64":         {"legacy_packets_received_total", "Number of data packets received on all links", false},
	"port_unicast_rcv_packets":    {"legacy_unicast_packets_received_total", "Number of unicast packets received", false},
	"port_unicast_xmit_packets":   {"legacy_unicast_packets_transmitted_total", "Number of unicast packets transmitted", false},
	"port_xmit_data_64":           {"legacy_data_transmitted_bytes_total", "Number of data octets transmitted on all links", true},
	"port_xmit_packets_64":        {"legacy_packets_transmitted_total", "Number of data packets received on all links", false},
}

// hwMetrics maps a hw_counters/ file to the name node_exporter (1.11 and
// later) gives it, with its help text; lifespan is lifespan_seconds
// (descLifespan). Every hw_counters/ file, these included, is also
// rdma_hw_stat_total{counter=FILE}.
var hwMetrics = map[string][2]string{
	"duplicate_request":          {"duplicate_requests_packets_total", "The number of received packets. A duplicate request is a request that had been previously executed."},
	"implied_nak_seq_err":        {"implied_nak_seq_errors_total", "The number of time the requested decided an ACK. with a PSN larger than the expected PSN for an RDMA read or response."},
	"local_ack_timeout_err":      {"local_ack_timeout_errors_total", "The number of times QP's ack timer expired for RC, XRC, DCT QPs at the sender side. The QP retry limit was not exceed, therefore it is still recoverable error."},
	"np_cnp_sent":                {"np_cnp_packets_sent_total", "The number of CNP packets sent by the Notification Point when it noticed congestion experienced in the RoCEv2 IP header (ECN bits). The counters was added in MLNX_OFED 4.1"},
	"np_ecn_marked_roce_packets": {"np_ecn_marked_roce_packets_received_total", "The number of RoCEv2 packets received by the notification point which were marked for experiencing the congestion (ECN bits where '11' on the ingress RoCE traffic) . The counters was added in MLNX_OFED 4.1"},
	"out_of_buffer":              {"out_of_buffer_drops_total", "The number of drops occurred due to lack of WQE for the associated QPs."},
	"out_of_sequence":            {"out_of_sequence_packets_received_total", "The number of out of sequence packets received."},
	"packet_seq_err":             {"packet_sequence_errors_total", "The number of received NAK sequence error packets. The QP retry limit was not exceeded."},
	"req_cqe_error":              {"req_cqes_errors_total", "The number of times requester detected CQEs completed with errors. The counters was added in MLNX_OFED 4.1"},
	"req_cqe_flush_error":        {"req_cqes_flush_errors_total", "The number of times requester detected CQEs completed with flushed errors. The counters was added in MLNX_OFED 4.1"},
	"req_remote_access_errors":   {"req_remote_access_errors_total", "The number of times requester detected remote access errors. The counters was added in MLNX_OFED 4.1"},
	"req_remote_invalid_request": {"req_remote_invalid_request_errors_total", "The number of times requester detected remote invalid request errors. The counters was added in MLNX_OFED 4.1"},
	"resp_cqe_error":             {"resp_cqes_errors_total", "The number of times responder detected CQEs completed with errors. The counters was added in MLNX_OFED 4.1"},
	"resp_cqe_flush_error":       {"resp_cqes_flush_errors_total", "The number of times responder detected CQEs completed with flushed errors. The counters was added in MLNX_OFED 4.1"},
	"resp_local_length_error":    {"resp_local_length_errors_total", "The number of times responder detected local length errors. The counters was added in MLNX_OFED 4.1"},
	"resp_remote_access_errors":  {"resp_remote_access_errors_total", "The number of times responder detected remote access errors. The counters was added in MLNX_OFED 4.1"},
	"rnr_nak_retry_err":          {"rnr_nak_retry_packets_received_total", "The number of received RNR NAK packets. The QP retry limit was not exceeded."},
	"roce_adp_retrans":           {"roce_adp_retransmits_total", "The number of adaptive retransmissions for RoCE traffic. The counter was added in MLNX_OFED rev 5.0-1.0.0.0 and kernel v5.6.0"},
	"roce_adp_retrans_to":        {"roce_adp_retransmits_timeout_total", "The number of times RoCE traffic reached timeout due to adaptive retransmission. The counter was added in MLNX_OFED rev 5.0-1.0.0.0 and kernel v5.6.0"},
	"roce_slow_restart":          {"roce_slow_restart_used_total", "The number of times RoCE slow restart was used. The counter was added in MLNX_OFED rev 5.0-1.0.0.0 and kernel v5.6.0"},
	"roce_slow_restart_cnps":     {"roce_slow_restart_cnps_total", "The number of times RoCE slow restart generated CNP packets. The counter was added in MLNX_OFED rev 5.0-1.0.0.0 and kernel v5.6.0"},
	"roce_slow_restart_trans":    {"roce_slow_restart_total", "The number of times RoCE slow restart changed state to slow restart. The counter was added in MLNX_OFED rev 5.0-1.0.0.0 and kernel v5.6.0"},
	"rp_cnp_handled":             {"rp_cnp_packets_handled_total", "The number of CNP packets handled by the Reaction Point HCA to throttle the transmission rate. The counters was added in MLNX_OFED 4.1"},
	"rp_cnp_ignored":             {"rp_cnp_ignored_packets_received_total", "The number of CNP packets received and ignored by the Reaction Point HCA. This counter should not raise if RoCE Congestion Control was enabled in the network. If this counter raise, verify that ECN was enabled on the adapter."},
	"rx_atomic_requests":         {"rx_atomic_requests_total", "The number of received ATOMIC request for the associated QPs."},
	"rx_dct_connect":             {"rx_dct_connect_requests_total", "The number of received connection requests for the associated DCTs."},
	"rx_icrc_encapsulated":       {"rx_icrc_encapsulated_errors_total", "The number of RoCE packets with ICRC errors. This counter was added in MLNX_OFED 4.4 and kernel 4.19"},
	"rx_read_requests":           {"rx_read_requests_total", "The number of received READ requests for the associated QPs."},
	"rx_write_requests":          {"rx_write_requests_total", "The number of received WRITE requests for the associated QPs."},
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
	descDevHw = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc("rdma_device_hw_stat_total", "A device-wide hw_counters/ value (/sys/class/infiniband/<device>/hw_counters/<counter>; hfi1).", []string{"device", "counter"}, nil)
	})
	descLifespan = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc(ns+"lifespan_seconds", "The maximum period in ms which defines the aging of the counter reads. Two consecutive reads within this period might return the same values.", portLabels, nil)
	})
	descReadErrors = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc("rdma_exporter_read_errors", "Reads of the device that failed in this scrape, per source: files (each failed file loses only its own series) or netlink requests. 0 when everything was read.", []string{"source", "device"}, nil)
	})
	// pmaDescs holds the descriptors of counters/ and counters_ext/ files,
	// keyed by file name (the two directories' names do not overlap).
	pmaDescs = sync.OnceValue(func() map[string]*prometheus.Desc {
		m := map[string]*prometheus.Desc{}
		for file, p := range pmaMetrics {
			m[file] = prometheus.NewDesc(ns+p.name, p.help, portLabels, nil)
		}
		for file, p := range legacyMetrics {
			m[file] = prometheus.NewDesc(ns+p.name, p.help, portLabels, nil)
		}
		return m
	})
	hwDescs = sync.OnceValue(func() map[string]*prometheus.Desc {
		m := map[string]*prometheus.Desc{}
		for file, p := range hwMetrics {
			m[file] = prometheus.NewDesc(ns+p[0], p[1], portLabels, nil)
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
	// MaxOpenFiles bounds the sysfs files held open between scrapes
	// (sysfs.FileLimit): 0 means DefaultMaxOpenFiles, a negative number
	// none (every file is opened, read and closed on each scrape).
	MaxOpenFiles int
}

// DefaultMaxOpenFiles is how many sysfs counter files the exporter keeps
// open between scrapes by default: a host's first devices are read with
// one pread a file, the rest with open, read and close, and the exporter
// holds a few dozen descriptors whatever the number of devices.
const DefaultMaxOpenFiles = 32

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
	limit := cfg.MaxOpenFiles
	if limit == 0 {
		limit = DefaultMaxOpenFiles
	}
	fs = fs.WithFileLimit(sysfs.NewFileLimit(limit))
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
	ib, hw, nl := !e.cfg.Off[SourceInfiniBand], !e.cfg.Off[SourceHwCounters], !e.cfg.Off[SourceNetlink]
	var caErr error
	if ib || hw || nl {
		caErr = e.devs.refresh(e.fs)
	}
	cas := e.devs.cas
	for _, ds := range cas {
		ds.failed = [numDevSources]int{}
	}
	var errs [numDevSources]error
	if ib || hw {
		errs[srcIB], errs[srcHw] = e.collectSysfs(ch, cas, ib, hw)
	}
	if nl {
		errs[srcNetlink] = e.collectNetlink(ch, cas)
	}
	for i, on := range [numDevSources]bool{ib, hw, nl} {
		if !on {
			continue
		}
		for _, ds := range cas {
			e.samples.send(ch, descReadErrors(), ds.errLabels[i], float64(ds.failed[i]), true)
		}
		e.sendUp(ch, devSourceNames[i], errors.Join(caErr, errs[i]))
	}
	if !e.cfg.Off[SourceFlows] && e.flows != nil {
		e.sendUp(ch, SourceFlows, e.flows.collect(ch))
	} else if !e.cfg.Off[SourceFlows] {
		e.sendUp(ch, SourceFlows, nil)
	}
	if e.cfg.Fabric != nil && !e.cfg.Off[SourceFabric] {
		e.sendUp(ch, SourceFabric, e.collectFabric(ch))
	}
}

// sendUp sends the source's rdma_exporter_source_up: 0, and a line in the
// log, when err says some of its series are missing.
func (e *Exporter) sendUp(ch chan<- prometheus.Metric, src string, err error) {
	up := 1.0
	if err != nil {
		up = 0
		e.cfg.Logger.Warn("source failed", "source", src, "err", err)
	}
	ch <- prometheus.MustNewConstMetric(descUp(), prometheus.GaugeValue, up, src)
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
		name := ds.name
		if ds.portsErr != nil {
			ds.failed[srcNetlink]++
			errs = append(errs, ds.portsErr)
		}
		for _, p := range ds.ports {
			st, err := nl.PortStatsByName(name, p.num)
			if err != nil {
				if !errors.Is(err, sysfs.ErrNotSupported) && !isEINVAL(err) {
					ds.failed[srcNetlink]++
					errs = append(errs, err)
				}
				continue // a device without statistics (no hw counters)
			}
			for _, c := range st.Counters {
				ch <- prometheus.MustNewConstMetric(descNetlink(), prometheus.CounterValue, float64(c.Value), name, strconv.Itoa(p.num), c.Name)
			}
		}
		qs, ok := nl.(QPCounterSource)
		if !ok {
			continue
		}
		cs, err := qs.QPCountersByName(name)
		if err != nil {
			if !errors.Is(err, sysfs.ErrNotSupported) && !isEINVAL(err) && !errors.Is(err, syscall.EOPNOTSUPP) {
				ds.failed[srcNetlink]++
				errs = append(errs, err)
			}
			continue
		}
		for _, c := range cs {
			port, id := strconv.FormatUint(uint64(c.Port), 10), strconv.FormatUint(uint64(c.ID), 10)
			for _, hc := range c.Counters {
				ch <- prometheus.MustNewConstMetric(descQPStat(), prometheus.CounterValue, float64(hc.Value), name, port, id, hc.Name)
			}
			for _, qpn := range c.QPNs {
				ch <- prometheus.MustNewConstMetric(descQPInfo(), prometheus.GaugeValue, 1, name, port, id, strconv.FormatUint(uint64(qpn), 10))
			}
		}
	}
	return errors.Join(errs...)
}

// ConfigError is a configuration the exporter refuses at start.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

func configErr(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}
