package sysfs

import (
	"encoding/binary"

	"github.com/purerdma/rdma"
)

// parseGUID parses a GUID in the sysfs form: four colon-separated groups of
// one to four hex digits ("%04x:%04x:%04x:%04x" prints exactly four;
// shorter groups are accepted as libibumad's parser accepts them). It
// returns a *ParseError otherwise.
func parseGUID(s string) (rdma.GUID, error) {
	var groups [4]uint16
	if !parseGroups(s, groups[:]) {
		return 0, parseErr("", s, `four colon-separated 16-bit hex groups ("%04x:%04x:%04x:%04x")`)
	}
	var g rdma.GUID
	for _, v := range groups {
		g = g<<16 | rdma.GUID(v)
	}
	return g, nil
}

// parseGID parses a GID in the sysfs form: eight colon-separated groups of
// one to four hex digits (the kernel always prints four). Compressed IPv6
// notation ("fe80::1") is not sysfs's and is refused with a *ParseError.
func parseGID(s string) (rdma.GID, error) {
	var groups [8]uint16
	if !parseGroups(s, groups[:]) {
		return rdma.GID{}, parseErr("", s, `eight colon-separated 16-bit hex groups ("%04x:…:%04x", the kernel's %pI6)`)
	}
	var g rdma.GID
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
