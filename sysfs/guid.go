package sysfs

import (
	"strings"

	"github.com/purerdma/rdma"
)

// parseGUID parses a GUID in the sysfs form with [rdma.ParseGUID] and
// returns a *ParseError when the text is not one.
func parseGUID(s string) (rdma.GUID, error) {
	g, err := rdma.ParseGUID(s)
	if err != nil {
		return 0, parseErr("", s, `four colon-separated 16-bit hex groups ("%04x:%04x:%04x:%04x")`)
	}
	return g, nil
}

// parseGID parses a GID in the sysfs form (eight colon-separated groups of
// one to four hex digits; the kernel always prints four) with
// [rdma.ParseGID]. The other IPv6 notations ParseGID takes ("fe80::1") are
// not sysfs's and are refused with a *ParseError.
func parseGID(s string) (rdma.GID, error) {
	if strings.Count(s, ":") == 7 && !strings.Contains(s, "::") {
		if g, err := rdma.ParseGID(s); err == nil {
			return g, nil
		}
	}
	return rdma.GID{}, parseErr("", s, `eight colon-separated 16-bit hex groups ("%04x:…:%04x", the kernel's %pI6)`)
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
