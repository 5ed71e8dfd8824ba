package diags

import (
	"fmt"
	"net/netip"
	"strings"
)

// inetNtop6 is glibc's inet_ntop(AF_INET6): the longest run of two or
// more zero words (the first of equal ones) as "::", and an IPv4 tail
// for ::a.b.c.d and ::ffff:a.b.c.d.
func inetNtop6(b []byte) string {
	var w [8]uint16
	for i := range w {
		if 2*i+1 < len(b) {
			w[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		}
	}
	best, bestLen := -1, 0
	for i := 0; i < 8; {
		if w[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && w[j] == 0 {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	if bestLen < 2 {
		best = -1
	}
	var s strings.Builder
	for i := 0; i < 8; i++ {
		if best >= 0 && i >= best && i < best+bestLen {
			if i == best {
				s.WriteByte(':')
			}
			continue
		}
		if i != 0 {
			s.WriteByte(':')
		}
		if i == 6 && best == 0 && (bestLen == 6 || bestLen == 5 && w[5] == 0xffff) {
			fmt.Fprintf(&s, "%d.%d.%d.%d", w[6]>>8, w[6]&0xff, w[7]>>8, w[7]&0xff)
			break
		}
		fmt.Fprintf(&s, "%x", w[i])
	}
	if best >= 0 && best+bestLen == 8 {
		s.WriteByte(':')
	}
	return s.String()
}

// inetPton6 is inet_pton(AF_INET6): an IPv6 address, without a zone.
func inetPton6(s string) ([16]byte, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() || a.Zone() != "" {
		return [16]byte{}, false
	}
	return a.As16(), true
}
