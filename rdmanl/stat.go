package rdmanl

import (
	"fmt"
	"syscall"

	"github.com/purerdma/rdma/abi"
)

// Counter modes of a port or an rdma_counter (enum rdma_nl_counter_mode).
const (
	CounterModeNone   = abi.RDMA_COUNTER_MODE_NONE   // no QP counters
	CounterModeAuto   = abi.RDMA_COUNTER_MODE_AUTO   // QPs bound by the port's rule ("auto")
	CounterModeManual = abi.RDMA_COUNTER_MODE_MANUAL // QPs bound one by one ("manual")
)

// QPCounter is one rdma_counter: a set of hardware counters that counts
// for the QPs bound to it, as "rdma statistic qp show" lists it
// (RDMA_NLDEV_CMD_STAT_GET dump with STAT_RES QP: nldev.c
// nldev_stat_get_dumpit, fill_res_counter_entry; the binding is counters.c
// rdma_counter_bind_qp_auto, rdma_counter_bind_qpn_alloc).
type QPCounter struct {
	// Device and Index identify the device; Port is the port number.
	Device string
	Index  uint32
	Port   uint32
	// ID is the counter's id (rdma's "cntn"), given by the driver.
	ID uint32
	// Mode is CounterModeAuto or CounterModeManual.
	Mode uint32
	// QPType is the QP type an auto counter binds (IB_QPT_*, rdma's
	// "qp-type"), sent only for an auto counter whose rule is the type.
	QPType *uint8
	// PID is the owning process's id; KernName the kernel user's name for
	// a counter of kernel QPs. One of them is set.
	PID      *uint32
	KernName *string
	// Counters are the counter's hardware counters, in the driver's order
	// (the values the kernel read from the driver for this request).
	Counters []NamedCounter
	// QPNs are the numbers of the QPs bound to it (rdma's "LQPN").
	QPNs []uint32
}

// QPCounters lists the QP counters (rdma_counters) of the device with
// index devIndex, in the kernel's order (by counter id), like "rdma
// statistic qp show link DEV". None is no counters: the ports' mode is
// none, or no QP matched an auto rule yet. The kernel answers EINVAL for
// an unknown device index.
func (n *Conn) QPCounters(devIndex uint32) ([]QPCounter, error) {
	dev := fmt.Sprintf("index %d", devIndex)
	msgs, err := n.run(abi.RDMA_NLDEV_CMD_STAT_GET, syscall.NLM_F_DUMP, []nlAttr{
		{abi.RDMA_NLDEV_ATTR_DEV_INDEX, u32(devIndex)},
		{abi.RDMA_NLDEV_ATTR_STAT_RES, u32(abi.RDMA_NLDEV_ATTR_RES_QP)},
	})
	if err != nil {
		return nil, &Error{Op: "netlink stat qp get", Device: dev, Err: err}
	}
	var out []QPCounter
	for _, m := range msgs {
		cs, err := decodeQPCounters(m)
		if err != nil {
			return nil, &Error{Op: "netlink stat qp get", Device: dev, Err: err}
		}
		out = append(out, cs...)
	}
	return out, nil
}

// QPCountersByName is [Conn.QPCounters] for the device called name. The
// error matches os.ErrNotExist when there is no such device.
func (n *Conn) QPCountersByName(name string) ([]QPCounter, error) {
	d, err := n.Device(name)
	if err != nil {
		return nil, err
	}
	return n.QPCounters(d.Index)
}

// PortCounterMode is a port's QP counter mode, as "rdma statistic qp mode"
// shows it.
type PortCounterMode struct {
	Device string
	Index  uint32
	Port   uint32
	// Mode is CounterModeNone, CounterModeAuto or CounterModeManual.
	Mode uint32
	// Mask is the auto rule (RDMA_COUNTER_MASK_*: 1 the QP type, 2 the
	// process), sent with the auto mode only.
	Mask *uint32
}

// CounterMode reads the QP counter mode of port of the device with index
// devIndex (RDMA_NLDEV_CMD_STAT_GET with STAT_MODE and STAT_RES QP:
// nldev.c stat_get_doit_qp, counters.c rdma_counter_get_mode).
func (n *Conn) CounterMode(devIndex uint32, port uint32) (*PortCounterMode, error) {
	dev := fmt.Sprintf("index %d/%d", devIndex, port)
	msgs, err := n.run(abi.RDMA_NLDEV_CMD_STAT_GET, 0, []nlAttr{
		{abi.RDMA_NLDEV_ATTR_DEV_INDEX, u32(devIndex)},
		{abi.RDMA_NLDEV_ATTR_PORT_INDEX, u32(port)},
		{abi.RDMA_NLDEV_ATTR_STAT_RES, u32(abi.RDMA_NLDEV_ATTR_RES_QP)},
		{abi.RDMA_NLDEV_ATTR_STAT_MODE, u32(abi.RDMA_COUNTER_MODE_MANUAL)}, // any value: its presence asks for the mode (rdma sends MANUAL)
	})
	if err != nil {
		return nil, &Error{Op: "netlink stat qp mode", Device: dev, Err: err}
	}
	if len(msgs) != 1 {
		return nil, &Error{Op: "netlink stat qp mode", Device: dev, Err: fmt.Errorf("the kernel sent %d replies, want 1", len(msgs))}
	}
	m, err := decodeCounterMode(msgs[0])
	if err != nil {
		return nil, &Error{Op: "netlink stat qp mode", Device: dev, Err: err}
	}
	return &m, nil
}

// decodeCounterMode decodes a stat_get_doit_qp reply: DEV_INDEX, DEV_NAME,
// PORT_INDEX, STAT_MODE and, in auto mode, STAT_AUTO_MODE_MASK.
func decodeCounterMode(b []byte) (PortCounterMode, error) {
	var m PortCounterMode
	var haveIndex, haveName, havePort, haveMode bool
	it := attrIter{b: b}
	for it.next() {
		var err error
		switch it.typ {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			m.Index, err = attrU32(it.typ, it.val)
			haveIndex = true
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			m.Device, err = attrString(it.typ, it.val)
			haveName = true
		case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
			m.Port, err = attrU32(it.typ, it.val)
			havePort = true
		case abi.RDMA_NLDEV_ATTR_STAT_MODE:
			m.Mode, err = attrU32(it.typ, it.val)
			haveMode = true
		case abi.RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK:
			var v uint32
			if v, err = attrU32(it.typ, it.val); err == nil {
				m.Mask = &v
			}
		}
		if err != nil {
			return PortCounterMode{}, err
		}
	}
	if it.err != nil {
		return PortCounterMode{}, it.err
	}
	if !haveIndex || !haveName || !havePort || !haveMode {
		return PortCounterMode{}, fmt.Errorf("nldev STAT_GET mode reply without the device index, name, port or %s", attrName(abi.RDMA_NLDEV_ATTR_STAT_MODE))
	}
	return m, nil
}

// decodeQPCounters decodes one message of a STAT_GET QP dump
// (res_get_common_dumpit for RDMA_RESTRACK_COUNTER): DEV_INDEX, DEV_NAME
// and a STAT_COUNTER nest of STAT_COUNTER_ENTRY nests (fill_res_counter_entry).
func decodeQPCounters(b []byte) ([]QPCounter, error) {
	return decodeDevEntries(b, abi.RDMA_NLDEV_ATTR_STAT_COUNTER, abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY,
		"nldev STAT_GET QP reply", decodeQPCounter,
		func(c *QPCounter, idx uint32, name string) { c.Index, c.Device = idx, name })
}

// decodeQPCounter decodes one STAT_COUNTER_ENTRY: PORT_INDEX,
// STAT_COUNTER_ID, STAT_MODE, RES_TYPE (auto by type), RES_PID or
// RES_KERN_NAME, STAT_HWCOUNTERS and a RES_QP nest of RES_QP_ENTRY nests,
// each a RES_LQPN.
func decodeQPCounter(b []byte) (QPCounter, error) {
	var c QPCounter
	var havePort, haveID, haveMode bool
	it := attrIter{b: b}
	for it.next() {
		var err error
		switch it.typ {
		case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
			c.Port, err = attrU32(it.typ, it.val)
			havePort = true
		case abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ID:
			c.ID, err = attrU32(it.typ, it.val)
			haveID = true
		case abi.RDMA_NLDEV_ATTR_STAT_MODE:
			c.Mode, err = attrU32(it.typ, it.val)
			haveMode = true
		case abi.RDMA_NLDEV_ATTR_RES_TYPE:
			var v uint8
			if v, err = attrU8(it.typ, it.val); err == nil {
				c.QPType = &v
			}
		case abi.RDMA_NLDEV_ATTR_RES_PID:
			var v uint32
			if v, err = attrU32(it.typ, it.val); err == nil {
				c.PID = &v
			}
		case abi.RDMA_NLDEV_ATTR_RES_KERN_NAME:
			var s string
			if s, err = attrString(it.typ, it.val); err == nil {
				c.KernName = &s
			}
		case abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS:
			if c.Counters != nil {
				return QPCounter{}, fmt.Errorf("%s with two %s", attrName(abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY), attrName(it.typ))
			}
			c.Counters, err = decodeHwCounterTable(it.val)
		case abi.RDMA_NLDEV_ATTR_RES_QP:
			q := attrIter{b: it.val}
			for q.next() {
				if q.typ != abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY {
					continue
				}
				e := attrIter{b: q.val}
				for e.next() {
					if e.typ == abi.RDMA_NLDEV_ATTR_RES_LQPN {
						v, err := attrU32(e.typ, e.val)
						if err != nil {
							return QPCounter{}, err
						}
						c.QPNs = append(c.QPNs, v)
					}
				}
				if e.err != nil {
					return QPCounter{}, e.err
				}
			}
			err = q.err
		}
		if err != nil {
			return QPCounter{}, err
		}
	}
	if it.err != nil {
		return QPCounter{}, it.err
	}
	if !havePort || !haveID || !haveMode {
		return QPCounter{}, fmt.Errorf("%s without the port, the counter id or the mode", attrName(abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY))
	}
	return c, nil
}
