package rdmanl

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/sysfs"
)

// Decoding of nldev replies. A payload is a sequence of netlink attributes
// (struct nlattr: u16 length including the 4-byte header, u16 type, value,
// padding to 4 bytes); values are in host byte order; the kernel may put a
// RDMA_NLDEV_ATTR_PAD attribute before a u64 to align it (on architectures
// without efficient unaligned access). Nothing here trusts a length.

const (
	nlaHdrLen   = 4
	nlaTypeMask = 0x3fff // without NLA_F_NESTED and NLA_F_NET_BYTEORDER
)

// attrIter walks the attributes of one payload. After next returns false,
// err says whether the payload ended cleanly.
type attrIter struct {
	b   []byte
	typ uint16
	val []byte
	err error
}

func (it *attrIter) next() bool {
	if it.err != nil || len(it.b) == 0 {
		return false
	}
	if len(it.b) < nlaHdrLen {
		it.err = fmt.Errorf("netlink attribute truncated: %d bytes left, a header needs 4", len(it.b))
		return false
	}
	l := int(binary.NativeEndian.Uint16(it.b[0:2]))
	if l < nlaHdrLen || l > len(it.b) {
		it.err = fmt.Errorf("netlink attribute type %d: length %d outside 4…%d", binary.NativeEndian.Uint16(it.b[2:4])&nlaTypeMask, l, len(it.b))
		return false
	}
	it.typ = binary.NativeEndian.Uint16(it.b[2:4]) & nlaTypeMask
	it.val = it.b[nlaHdrLen:l]
	adv := (l + 3) &^ 3
	if adv > len(it.b) {
		adv = len(it.b)
	}
	it.b = it.b[adv:]
	return true
}

// attrName names an nldev attribute in errors.
func attrName(typ uint16) string {
	switch typ {
	case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
		return "RDMA_NLDEV_ATTR_DEV_INDEX"
	case abi.RDMA_NLDEV_ATTR_DEV_NAME:
		return "RDMA_NLDEV_ATTR_DEV_NAME"
	case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
		return "RDMA_NLDEV_ATTR_PORT_INDEX"
	case abi.RDMA_NLDEV_ATTR_CAP_FLAGS:
		return "RDMA_NLDEV_ATTR_CAP_FLAGS"
	case abi.RDMA_NLDEV_ATTR_FW_VERSION:
		return "RDMA_NLDEV_ATTR_FW_VERSION"
	case abi.RDMA_NLDEV_ATTR_NODE_GUID:
		return "RDMA_NLDEV_ATTR_NODE_GUID"
	case abi.RDMA_NLDEV_ATTR_SYS_IMAGE_GUID:
		return "RDMA_NLDEV_ATTR_SYS_IMAGE_GUID"
	case abi.RDMA_NLDEV_ATTR_DEV_NODE_TYPE:
		return "RDMA_NLDEV_ATTR_DEV_NODE_TYPE"
	case abi.RDMA_NLDEV_ATTR_DEV_PROTOCOL:
		return "RDMA_NLDEV_ATTR_DEV_PROTOCOL"
	case abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS:
		return "RDMA_NLDEV_ATTR_STAT_HWCOUNTERS"
	case abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY:
		return "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY"
	case abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME:
		return "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME"
	case abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE:
		return "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE"
	case abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY:
		return "RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY"
	case abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME:
		return "RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME"
	case abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR:
		return "RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR"
	case abi.RDMA_NLDEV_ATTR_CHARDEV:
		return "RDMA_NLDEV_ATTR_CHARDEV"
	case abi.RDMA_NLDEV_ATTR_CHARDEV_ABI:
		return "RDMA_NLDEV_ATTR_CHARDEV_ABI"
	case abi.RDMA_NLDEV_ATTR_CHARDEV_NAME:
		return "RDMA_NLDEV_ATTR_CHARDEV_NAME"
	case abi.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID:
		return "RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID"
	}
	return "nldev attribute " + strconv.Itoa(int(typ))
}

func attrErr(typ uint16, val []byte, want string) error {
	return parseErr(attrName(typ), fmt.Sprintf("% x", val), want)
}

func attrU8(typ uint16, v []byte) (uint8, error) {
	if len(v) != 1 {
		return 0, attrErr(typ, v, "a u8 (1 byte)")
	}
	return v[0], nil
}

func attrU32(typ uint16, v []byte) (uint32, error) {
	if len(v) != 4 {
		return 0, attrErr(typ, v, "a u32 (4 bytes)")
	}
	return binary.NativeEndian.Uint32(v), nil
}

func attrU64(typ uint16, v []byte) (uint64, error) {
	if len(v) != 8 {
		return 0, attrErr(typ, v, "a u64 (8 bytes)")
	}
	return binary.NativeEndian.Uint64(v), nil
}

// attrString decodes a NUL-terminated string attribute (nla_put_string
// includes the NUL); bytes after the first NUL are ignored.
func attrString(typ uint16, v []byte) (string, error) {
	for i, c := range v {
		if c == 0 {
			return string(v[:i]), nil
		}
	}
	return "", attrErr(typ, v, "a NUL-terminated string")
}

// decodeDevice decodes the payload of an RDMA_NLDEV_CMD_GET reply
// (fill_dev_info in drivers/infiniband/core/nldev.c). Unknown attributes
// are skipped; the index, name, last port and both GUIDs must be present.
func decodeDevice(b []byte) (Device, error) {
	var d Device
	var have struct{ index, name, ports, node, sys bool }
	it := attrIter{b: b}
	for it.next() {
		var err error
		switch it.typ {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			d.Index, err = attrU32(it.typ, it.val)
			have.index = true
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			d.Name, err = attrString(it.typ, it.val)
			have.name = true
		case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
			var v uint32
			v, err = attrU32(it.typ, it.val)
			d.NumPorts = int(v)
			have.ports = true
		case abi.RDMA_NLDEV_ATTR_CAP_FLAGS:
			var v uint64
			if v, err = attrU64(it.typ, it.val); err == nil {
				d.CapFlags = &v
			}
		case abi.RDMA_NLDEV_ATTR_FW_VERSION:
			var s string
			if s, err = attrString(it.typ, it.val); err == nil {
				d.FWVersion = &s
			}
		case abi.RDMA_NLDEV_ATTR_NODE_GUID:
			var v uint64
			v, err = attrU64(it.typ, it.val)
			d.NodeGUID = rdma.GUID(v)
			have.node = true
		case abi.RDMA_NLDEV_ATTR_SYS_IMAGE_GUID:
			var v uint64
			v, err = attrU64(it.typ, it.val)
			d.SysImageGUID = rdma.GUID(v)
			have.sys = true
		case abi.RDMA_NLDEV_ATTR_DEV_NODE_TYPE:
			var v uint8
			if v, err = attrU8(it.typ, it.val); err == nil {
				t := rdma.NodeType(v)
				d.NodeType = &t
			}
		case abi.RDMA_NLDEV_ATTR_DEV_PROTOCOL:
			var s string
			if s, err = attrString(it.typ, it.val); err == nil {
				d.Protocol = &s
			}
		}
		if err != nil {
			return Device{}, err
		}
	}
	if it.err != nil {
		return Device{}, it.err
	}
	for _, m := range []struct {
		ok  bool
		typ uint16
	}{
		{have.index, abi.RDMA_NLDEV_ATTR_DEV_INDEX},
		{have.name, abi.RDMA_NLDEV_ATTR_DEV_NAME},
		{have.ports, abi.RDMA_NLDEV_ATTR_PORT_INDEX},
		{have.node, abi.RDMA_NLDEV_ATTR_NODE_GUID},
		{have.sys, abi.RDMA_NLDEV_ATTR_SYS_IMAGE_GUID},
	} {
		if !m.ok {
			return Device{}, fmt.Errorf("nldev GET reply without %s", attrName(m.typ))
		}
	}
	return d, nil
}

// decodePortStats decodes the payload of an RDMA_NLDEV_CMD_STAT_GET reply
// for a port (stat_get_doit_default_counter in nldev.c): DEV_INDEX,
// DEV_NAME, PORT_INDEX and a STAT_HWCOUNTERS nest of STAT_HWCOUNTER_ENTRY
// nests, each a name and a u64 value.
func decodePortStats(b []byte) (Stats, error) {
	var s Stats
	var haveIndex, haveName, havePort, haveTable bool
	it := attrIter{b: b}
	for it.next() {
		var err error
		switch it.typ {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			s.Index, err = attrU32(it.typ, it.val)
			haveIndex = true
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			s.Device, err = attrString(it.typ, it.val)
			haveName = true
		case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
			var v uint32
			v, err = attrU32(it.typ, it.val)
			s.Port = int(v)
			havePort = true
		case abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS:
			if haveTable {
				return Stats{}, fmt.Errorf("nldev STAT_GET reply with two %s", attrName(it.typ))
			}
			haveTable = true
			s.Counters, err = decodeHwCounterTable(it.val)
		}
		if err != nil {
			return Stats{}, err
		}
	}
	if it.err != nil {
		return Stats{}, it.err
	}
	if !haveIndex || !haveName || !havePort || !haveTable {
		return Stats{}, fmt.Errorf("nldev STAT_GET reply without the device index, name, port or %s", attrName(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS))
	}
	return s, nil
}

func decodeHwCounterTable(b []byte) ([]NamedCounter, error) {
	return decodeNamedTable(b, abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY,
		abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE,
		"without a name or a value")
}

// decodeNamedTable decodes a nested table of entries (type entry), each
// a name (type name, a string) and a value (type value, a u64), in
// order: the hardware counters of STAT_GET and the resource summary of
// RES_GET have this shape. Attributes of other types are skipped; an
// entry that lacks its name or value is an error, missing says which.
func decodeNamedTable(b []byte, entry, name, value uint16, missing string) ([]NamedCounter, error) {
	out := []NamedCounter{}
	it := attrIter{b: b}
	for it.next() {
		if it.typ != entry {
			continue
		}
		var c NamedCounter
		var haveName, haveValue bool
		e := attrIter{b: it.val}
		for e.next() {
			var err error
			switch e.typ {
			case name:
				c.Name, err = attrString(e.typ, e.val)
				haveName = true
			case value:
				c.Value, err = attrU64(e.typ, e.val)
				haveValue = true
			}
			if err != nil {
				return nil, err
			}
		}
		if e.err != nil {
			return nil, e.err
		}
		if !haveName || !haveValue {
			return nil, fmt.Errorf("%s %s", attrName(entry), missing)
		}
		out = append(out, c)
	}
	if it.err != nil {
		return nil, it.err
	}
	return out, nil
}

// decodeChardev decodes the payload of an RDMA_NLDEV_CMD_GET_CHARDEV reply
// (nldev_get_chardev in nldev.c): CHARDEV (u64, huge_encode_dev), CHARDEV_ABI
// (u64), CHARDEV_NAME, and for uverbs UVERBS_DRIVER_ID, which the kernel
// writes as a u32 although the UAPI comment says u64 (both are accepted).
func decodeChardev(b []byte) (Chardev, error) {
	var c Chardev
	var haveDev, haveABI, haveName bool
	it := attrIter{b: b}
	for it.next() {
		var err error
		switch it.typ {
		case abi.RDMA_NLDEV_ATTR_CHARDEV:
			var v uint64
			v, err = attrU64(it.typ, it.val)
			c.Dev = hugeDecodeDev(v)
			haveDev = true
		case abi.RDMA_NLDEV_ATTR_CHARDEV_ABI:
			c.ABI, err = attrU64(it.typ, it.val)
			haveABI = true
		case abi.RDMA_NLDEV_ATTR_CHARDEV_NAME:
			c.Name, err = attrString(it.typ, it.val)
			haveName = true
		case abi.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID:
			var v uint32
			if len(it.val) == 8 {
				var w uint64
				w, err = attrU64(it.typ, it.val)
				v = uint32(w)
			} else {
				v, err = attrU32(it.typ, it.val)
			}
			if err == nil {
				d := rdma.DriverID(v)
				c.DriverID = &d
			}
		}
		if err != nil {
			return Chardev{}, err
		}
	}
	if it.err != nil {
		return Chardev{}, it.err
	}
	if !haveDev || !haveABI || !haveName {
		return Chardev{}, fmt.Errorf("nldev GET_CHARDEV reply without %s, %s or %s",
			attrName(abi.RDMA_NLDEV_ATTR_CHARDEV), attrName(abi.RDMA_NLDEV_ATTR_CHARDEV_ABI), attrName(abi.RDMA_NLDEV_ATTR_CHARDEV_NAME))
	}
	return c, nil
}

// hugeDecodeDev undoes the kernel's huge_encode_dev: minor bits 0–7 in
// bits 0–7, the major in bits 8–19, minor bits 8–19 in bits 20–31.
func hugeDecodeDev(v uint64) sysfs.DevNumber {
	return sysfs.DevNumber{
		Major: uint32(v>>8) & 0xfff,
		Minor: uint32(v&0xff) | uint32(v>>12)&0xfff00,
	}
}
