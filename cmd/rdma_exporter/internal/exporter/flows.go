package exporter

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/purerdma/rdma/sysfs"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/uverbs"
)

// FlowConfig is one flow of the config file: a name (the "flow" label), a
// device and port, and what to match. Every match field is optional; the
// flow counts the packets that have all the given values.
type FlowConfig struct {
	Name   string `json:"name"`
	Device string `json:"device"`
	Port   int    `json:"port"`
	// Ethernet.
	DstMAC    string `json:"dst_mac,omitempty"`
	SrcMAC    string `json:"src_mac,omitempty"`
	EtherType uint16 `json:"ethertype,omitempty"`
	VLAN      uint16 `json:"vlan,omitempty"` // the VLAN ID (12 bits)
	// IPv4 (addresses "10.0.0.1" or prefixes "10.0.0.0/24") and the
	// transport: "tcp" or "udp" with optional ports.
	SrcIP   string `json:"src_ip,omitempty"`
	DstIP   string `json:"dst_ip,omitempty"`
	Proto   string `json:"proto,omitempty"`
	SrcPort uint16 `json:"src_port,omitempty"`
	DstPort uint16 `json:"dst_port,omitempty"`
}

// ReadFlows reads a flows config file: a JSON array of FlowConfig. Every
// problem is a *ConfigError.
func ReadFlows(r io.Reader) ([]FlowConfig, error) {
	dec := json.NewDecoder(io.LimitReader(r, 1<<20))
	dec.DisallowUnknownFields()
	var fs []FlowConfig
	if err := dec.Decode(&fs); err != nil {
		return nil, configErr("flows config: %v", err)
	}
	seen := map[string]bool{}
	for i, f := range fs {
		switch {
		case f.Name == "":
			return nil, configErr("flows config: flow %d has no name", i+1)
		case seen[f.Name]:
			return nil, configErr("flows config: two flows are called %q", f.Name)
		case f.Device == "":
			return nil, configErr("flows config: flow %q names no device", f.Name)
		}
		seen[f.Name] = true
		if f.Port == 0 {
			fs[i].Port = 1
		} else if f.Port < 0 || f.Port > 255 {
			return nil, configErr("flows config: flow %q: port %d is not a port number (1 to 255)", f.Name, f.Port)
		}
		if _, err := f.specs(); err != nil {
			return nil, configErr("flows config: flow %q: %v", f.Name, err)
		}
	}
	return fs, nil
}

// specs turns the match into flow specs (without the count action).
func (f FlowConfig) specs() ([]flow.Spec, error) {
	ones := flow.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	eth := &flow.Eth{}
	mac := func(s string, v, m *flow.MAC) error {
		if s == "" {
			return nil
		}
		hw, err := net.ParseMAC(s)
		if err != nil || len(hw) != 6 {
			return fmt.Errorf("bad MAC address %q", s)
		}
		copy(v[:], hw)
		*m = ones
		return nil
	}
	if err := mac(f.DstMAC, &eth.Value.DstMAC, &eth.Mask.DstMAC); err != nil {
		return nil, err
	}
	if err := mac(f.SrcMAC, &eth.Value.SrcMAC, &eth.Mask.SrcMAC); err != nil {
		return nil, err
	}
	if f.VLAN > 0xfff {
		return nil, fmt.Errorf("VLAN %d is not a 12-bit VLAN ID", f.VLAN)
	}
	if f.VLAN != 0 {
		eth.Value.VLANTag, eth.Mask.VLANTag = f.VLAN, 0x0fff
	}
	ip := f.SrcIP != "" || f.DstIP != "" || f.Proto != ""
	if f.EtherType != 0 {
		eth.Value.EtherType, eth.Mask.EtherType = f.EtherType, 0xffff
	} else if ip {
		eth.Value.EtherType, eth.Mask.EtherType = 0x0800, 0xffff
	}
	if ip && eth.Value.EtherType != 0x0800 {
		return nil, fmt.Errorf("IP fields with ethertype %#04x: only IPv4 (0x0800) is supported here", eth.Value.EtherType)
	}
	specs := []flow.Spec{eth}
	if !ip {
		if f.SrcPort != 0 || f.DstPort != 0 {
			return nil, errors.New("ports need proto tcp or udp")
		}
		return specs, nil
	}
	v4 := &flow.IPv4{}
	addr := func(s string, v, m *[4]byte) error {
		if s == "" {
			return nil
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, err2 := netip.ParseAddr(s)
			if err2 != nil {
				return fmt.Errorf("bad IPv4 address %q", s)
			}
			p = netip.PrefixFrom(a, 32)
		}
		if !p.Addr().Is4() {
			return fmt.Errorf("%q is not an IPv4 address", s)
		}
		*v = p.Masked().Addr().As4()
		mask := net.CIDRMask(p.Bits(), 32)
		copy(m[:], mask)
		return nil
	}
	if err := addr(f.SrcIP, &v4.Value.Src, &v4.Mask.Src); err != nil {
		return nil, err
	}
	if err := addr(f.DstIP, &v4.Value.Dst, &v4.Mask.Dst); err != nil {
		return nil, err
	}
	specs = append(specs, v4)
	ports := flow.PortFilter{DstPort: f.DstPort, SrcPort: f.SrcPort}
	var pm flow.PortFilter
	if f.DstPort != 0 {
		pm.DstPort = 0xffff
	}
	if f.SrcPort != 0 {
		pm.SrcPort = 0xffff
	}
	switch f.Proto {
	case "":
		if f.SrcPort != 0 || f.DstPort != 0 {
			return nil, errors.New("ports need proto tcp or udp")
		}
	case "tcp":
		specs = append(specs, &flow.TCP{Value: ports, Mask: pm})
	case "udp":
		specs = append(specs, &flow.UDP{Value: ports, Mask: pm})
	default:
		return nil, fmt.Errorf("proto %q: want tcp or udp", f.Proto)
	}
	return specs, nil
}

// flowSet owns the configured flows: a context and a RAW_PACKET QP per
// device and port, and per flow a counters object (packets at 0, bytes at
// 1) bound to a DONT_TRAP flow.
type flowSet struct {
	ctxs  []*uverbs.Context
	flows []*countedFlow
	vals  [2]uint64
}

type countedFlow struct {
	cfg FlowConfig
	cs  *counters.Object
	f   *flow.Flow
}

var (
	descFlowPackets = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc("rdma_flow_packets_total", "Packets a configured flow matched (a verbs counters object on a DONT_TRAP flow).", []string{"flow", "device", "port"}, nil)
	})
	descFlowBytes = sync.OnceValue(func() *prometheus.Desc {
		return prometheus.NewDesc("rdma_flow_bytes_total", "Bytes of the packets a configured flow matched, from the destination MAC to the end of the payload.", []string{"flow", "device", "port"}, nil)
	})
)

func newFlowSet(cfgs []FlowConfig, fsys *sysfs.FS) (_ *flowSet, err error) {
	s := &flowSet{}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	ctxs := map[string]*uverbs.Context{}
	qps := map[string]*uverbs.QP{}
	opts := &uverbs.Options{Sysfs: fsys}
	for _, fc := range cfgs {
		c := ctxs[fc.Device]
		if c == nil {
			if c, err = uverbs.Open(fc.Device, opts); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return nil, configErr("flow %q: no RDMA device %s", fc.Name, fc.Device)
				}
				return nil, fmt.Errorf("flow %q: %w", fc.Name, err)
			}
			ctxs[fc.Device] = c
			s.ctxs = append(s.ctxs, c)
		}
		// DONT_TRAP is the promise that a counting flow steals nothing:
		// mlx5 forwards what it matched to the next priority
		// (MLX5_FLOW_CONTEXT_ACTION_FWD_NEXT_PRIO, fs.c
		// _create_flow_rule). A driver that cannot keep it would leave
		// matched traffic on a RAW_PACKET QP with no receives posted.
		if c.DriverID() != rdma.DriverMLX5 {
			return nil, configErr("flow %q: %s's driver (%s) cannot count without taking the traffic (no DONT_TRAP flows); only mlx5 can", fc.Name, fc.Device, c.DriverID())
		}
		key := fmt.Sprintf("%s/%d", fc.Device, fc.Port)
		qp := qps[key]
		if qp == nil {
			pd, err := c.AllocPD()
			if err != nil {
				return nil, err
			}
			cq, err := c.CreateCQ(uverbs.CQAttr{CQE: 1})
			if err != nil {
				return nil, err
			}
			if qp, err = pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRawPacket, SendCQ: cq, RecvCQ: cq,
				Cap: uverbs.QPCap{MaxRecvWR: 1, MaxRecvSGE: 1}}); err != nil {
				if errors.Is(err, syscall.EPERM) {
					return nil, fmt.Errorf("flow %q: counting flows need CAP_NET_RAW: %w", fc.Name, err)
				}
				return nil, err
			}
			qps[key] = qp
		}
		specs, _ := fc.specs() // checked by ReadFlows
		cs, err := counters.Create(c, nil)
		if err != nil {
			return nil, fmt.Errorf("flow %q: %w", fc.Name, err)
		}
		for i, d := range []counters.Description{counters.Packets, counters.Bytes} {
			if err := cs.Attach(counters.AttachAttr{Desc: d, Index: uint32(i)}, nil); err != nil {
				return nil, fmt.Errorf("flow %q: %w", fc.Name, err)
			}
		}
		f, err := flow.Create(qp, &flow.Attr{Port: fc.Port, Flags: flow.FlagDontTrap,
			Specs: append(specs, &flow.Count{Counters: cs})})
		if err != nil {
			cs.Close()
			if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EOPNOTSUPP) {
				return nil, configErr("flow %q: the device refused the match: %v", fc.Name, err)
			}
			return nil, fmt.Errorf("flow %q: %w", fc.Name, err)
		}
		s.flows = append(s.flows, &countedFlow{cfg: fc, cs: cs, f: f})
	}
	return s, nil
}

func (s *flowSet) collect(ch chan<- prometheus.Metric) error {
	var errs []error
	for _, f := range s.flows {
		if err := f.cs.Read(s.vals[:], counters.PreferCached); err != nil {
			errs = append(errs, fmt.Errorf("flow %q: %w", f.cfg.Name, err))
			continue
		}
		port := fmt.Sprint(f.cfg.Port)
		ch <- prometheus.MustNewConstMetric(descFlowPackets(), prometheus.CounterValue, float64(s.vals[0]), f.cfg.Name, f.cfg.Device, port)
		ch <- prometheus.MustNewConstMetric(descFlowBytes(), prometheus.CounterValue, float64(s.vals[1]), f.cfg.Name, f.cfg.Device, port)
	}
	return errors.Join(errs...)
}

// close destroys the flows, then the counters, then everything else with
// the contexts.
func (s *flowSet) close() error {
	var errs []error
	for _, f := range s.flows {
		errs = append(errs, f.f.Close(), f.cs.Close())
	}
	for _, c := range s.ctxs {
		errs = append(errs, c.Close())
	}
	s.flows, s.ctxs = nil, nil
	return errors.Join(errs...)
}

func isNotExist(err error) bool { return err != nil && errors.Is(err, os.ErrNotExist) }
func isEINVAL(err error) bool   { return errors.Is(err, syscall.EINVAL) }
