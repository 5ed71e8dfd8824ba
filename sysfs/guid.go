package sysfs

import (
	"encoding/binary"
	"net/netip"
)

// GUID is a 64-bit InfiniBand GUID (node GUID, system image GUID, port GUID)
// as a number: the first group of the sysfs text is the most significant.
// sysfs prints it as four 16-bit groups, "%04x:%04x:%04x:%04x"
// (node_guid, sys_image_guid); ibstat prints it as 0x%016x; netlink carries
// it as a host-order u64 with the same value.
type GUID uint64

// String returns the sysfs form, "acad:e8ff:fe37:5f42".
func (g GUID) String() string {
	b := make([]byte, 0, 19)
	for i := 3; i >= 0; i-- {
		b = appendHex4(b, uint16(g>>(16*i)))
		if i > 0 {
			b = append(b, ':')
		}
	}
	return string(b)
}

// MarshalText returns the sysfs form.
func (g GUID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText parses the sysfs form (see [ParseGUID]).
func (g *GUID) UnmarshalText(b []byte) error {
	v, err := ParseGUID(string(b))
	if err != nil {
		return err
	}
	*g = v
	return nil
}

// ParseGUID parses a GUID in the sysfs form: four colon-separated groups of
// one to four hex digits ("%04x:%04x:%04x:%04x" prints exactly four; shorter
// groups are accepted as libibumad's parser accepts them). It returns a
// *ParseError otherwise.
func ParseGUID(s string) (GUID, error) {
	var groups [4]uint16
	if !parseGroups(s, groups[:]) {
		return 0, parseErr("", s, `four colon-separated 16-bit hex groups ("%04x:%04x:%04x:%04x")`)
	}
	var g GUID
	for _, v := range groups {
		g = g<<16 | GUID(v)
	}
	return g, nil
}

// GID is a 128-bit InfiniBand/RoCE global identifier in network byte order
// (the 16 bytes of an IPv6 address).
type GID [16]byte

// String returns the sysfs form: eight groups of four hex digits, never
// compressed ("fe80:0000:0000:0000:acad:e8ff:fe37:5f42", the kernel's %pI6).
// ibstatus prints GIDs this way; ibv_devinfo prints [GID.Addr] instead.
func (g GID) String() string {
	b := make([]byte, 0, 39)
	for i := 0; i < 8; i++ {
		if i > 0 {
			b = append(b, ':')
		}
		b = appendHex4(b, binary.BigEndian.Uint16(g[2*i:]))
	}
	return string(b)
}

// Addr returns the GID as an IPv6 address, whose String is the compressed
// form ibv_devinfo prints ("fe80::acad:e8ff:fe37:5f42"). A RoCE GID that
// holds an IPv4 address prints as "::ffff:10.77.0.1".
func (g GID) Addr() netip.Addr { return netip.AddrFrom16(g) }

// IsZero reports whether every byte is zero, which is how sysfs shows an
// empty GID table slot.
func (g GID) IsZero() bool { return g == GID{} }

// Prefix returns the upper 64 bits (the subnet prefix, libibumad's
// gid_prefix, as a host-order number).
func (g GID) Prefix() uint64 { return binary.BigEndian.Uint64(g[:8]) }

// InterfaceID returns the lower 64 bits (for GID 0 of an InfiniBand port the
// port GUID, libibumad's port_guid, as a host-order number).
func (g GID) InterfaceID() uint64 { return binary.BigEndian.Uint64(g[8:]) }

// MarshalText returns the sysfs form.
func (g GID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText parses the sysfs form (see [ParseGID]).
func (g *GID) UnmarshalText(b []byte) error {
	v, err := ParseGID(string(b))
	if err != nil {
		return err
	}
	*g = v
	return nil
}

// ParseGID parses a GID in the sysfs form: eight colon-separated groups of
// one to four hex digits (the kernel always prints four). Compressed IPv6
// notation ("fe80::1") is not sysfs's and is refused with a *ParseError.
func ParseGID(s string) (GID, error) {
	var groups [8]uint16
	if !parseGroups(s, groups[:]) {
		return GID{}, parseErr("", s, `eight colon-separated 16-bit hex groups ("%04x:…:%04x", the kernel's %pI6)`)
	}
	var g GID
	for i, v := range groups {
		binary.BigEndian.PutUint16(g[2*i:], v)
	}
	return g, nil
}

// parseGroups parses exactly len(out) colon-separated groups of 1–4 hex
// digits.
func parseGroups(s string, out []uint16) bool {
	n := 0
	for n < len(out) {
		var v uint16
		digits := 0
		for digits < len(s) && digits < 4 {
			d, ok := hexDigit(s[digits])
			if !ok {
				break
			}
			v = v<<4 | uint16(d)
			digits++
		}
		if digits == 0 {
			return false
		}
		out[n] = v
		n++
		s = s[digits:]
		if n == len(out) {
			break
		}
		if len(s) == 0 || s[0] != ':' {
			return false
		}
		s = s[1:]
	}
	return len(s) == 0
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func appendHex4(b []byte, v uint16) []byte {
	const digits = "0123456789abcdef"
	return append(b, digits[v>>12], digits[v>>8&0xf], digits[v>>4&0xf], digits[v&0xf])
}
