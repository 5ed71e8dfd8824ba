package sysfs

import (
	"math"
	"strconv"
	"strings"
)

// parseEnumLine parses the "number: name" lines of node_type ("1: CA"),
// ports/N/state ("4: ACTIVE") and ports/N/phys_state ("5: LinkUp"): a
// decimal number without leading zeros (negative only in theory: state is
// printed with %d), a colon, one space, and a name that may itself contain spaces ("7: Phy
// Test", "6: usNIC UDP"). It returns a *ParseError otherwise.
func parseEnumLine(s string) (n int, name string, err error) {
	num, rest, ok := strings.Cut(s, ": ")
	if !ok || rest == "" || strings.ContainsAny(rest, "\n\x00") {
		return 0, "", parseErr("", s, `"%d: %s" (a number, ": " and a name)`)
	}
	digits := strings.TrimPrefix(num, "-")
	if !allDigits(digits) || (digits[0] == '0' && len(digits) > 1) {
		return 0, "", parseErr("", s, `"%d: %s" (a decimal number without leading zeros before ": ")`)
	}
	v, err := strconv.ParseInt(num, 10, 32)
	if err != nil {
		return 0, "", parseErr("", s, `"%d: %s" (a 32-bit number before ": ")`)
	}
	return int(v), rest, nil
}

// Rate is a port's ports/N/rate, parsed. The kernel prints
// "%d%s Gb/sec (%dX%s)": the integer part of the rate, ".5" when there is a
// half, the number of lanes, and the per-lane speed name with a leading
// space (" SDR", " EDR", …; older kernels printed nothing for SDR).
type Rate struct {
	// Mbps is the rate in Mb/s, exactly: "2.5 Gb/sec" is 2500, "56 Gb/sec"
	// is 56000.
	Mbps uint64
	// Width is the number of lanes: 1, 2, 4, 8 or 12.
	Width int
	// Speed is the per-lane speed name without the space: "SDR", "DDR",
	// "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"; empty when the
	// kernel printed none.
	Speed string
	// Raw is the file's text without the newline, "100 Gb/sec (4X EDR)".
	Raw string
}

// Gbps returns the rate in Gb/s, as the kernel prints it (2.5, 100).
func (r Rate) Gbps() float64 { return float64(r.Mbps) / 1000 }

// String returns the rate in the kernel's format, built from Mbps, Width and
// Speed (not Raw): "2.5 Gb/sec (1X SDR)".
func (r Rate) String() string {
	b := strconv.AppendUint(nil, r.Mbps/1000, 10)
	if frac := r.Mbps % 1000; frac != 0 {
		f := strconv.AppendUint(nil, frac+1000, 10)[1:] // three digits
		f = []byte(strings.TrimRight(string(f), "0"))
		b = append(append(b, '.'), f...)
	}
	b = append(b, " Gb/sec ("...)
	b = strconv.AppendInt(b, int64(r.Width), 10)
	b = append(b, 'X')
	if r.Speed != "" {
		b = append(append(b, ' '), r.Speed...)
	}
	return string(append(b, ')'))
}

// ParseRate parses ports/N/rate: "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X
// SDR)", "10 Gb/sec (4X)" (older kernels). The integer part is printed
// without leading zeros and the rate may have up to three decimals; the
// width must be a positive number of lanes; the speed name, if any, is one
// word. It returns a *ParseError otherwise.
//
// libibumad does not parse the rate this way: it keeps only what strtoul
// reads, the integer part (Mbps/1000).
func ParseRate(s string) (Rate, error) {
	const want = `"%d%s Gb/sec (%dX%s)", e.g. "100 Gb/sec (4X EDR)"`
	bad := func() (Rate, error) { return Rate{}, parseErr("", s, want) }
	num, rest, ok := strings.Cut(s, " Gb/sec (")
	if !ok || !strings.HasSuffix(rest, ")") {
		return bad()
	}
	intPart, frac, hasFrac := strings.Cut(num, ".")
	if !allDigits(intPart) || len(intPart) > 12 || (intPart[0] == '0' && len(intPart) > 1) || (hasFrac && (len(frac) == 0 || len(frac) > 3 || !allDigits(frac))) {
		return bad()
	}
	ip, _ := strconv.ParseUint(intPart, 10, 64)
	mbps := ip * 1000
	if hasFrac {
		f, _ := strconv.ParseUint((frac + "00")[:3], 10, 64)
		mbps += f
	}
	inner := rest[:len(rest)-1]
	w, speed, found := strings.Cut(inner, "X")
	if !found || !allDigits(w) || len(w) > 3 {
		return bad()
	}
	width, _ := strconv.Atoi(w)
	if width == 0 {
		return bad()
	}
	if speed != "" {
		if speed[0] != ' ' || len(speed) == 1 || !isWord(speed[1:]) {
			return bad()
		}
		speed = speed[1:]
	}
	return Rate{Mbps: mbps, Width: width, Speed: speed, Raw: s}, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isWord reports whether s is made of letters and digits only.
func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return s != ""
}

// parseUint parses the kernel's unsigned integer formats: "0x%x" (lid,
// sm_lid, cap_mask, pkeys/N) or "%u" (lid_mask_count, sm_sl,
// hw_counters/*), into at most bits bits. Unlike libibumad's strtoul it
// refuses anything else.
func parseUint(s string, bits int) (uint64, bool) {
	base := 10
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		base = 16
		s = s[2:]
		for i := 0; i < len(s); i++ {
			if _, ok := hexDigit(s[i]); !ok {
				return 0, false
			}
		}
	} else if !allDigits(s) {
		return 0, false
	}
	v, err := strconv.ParseUint(s, base, bits)
	return v, err == nil
}

// parseCounter parses the value of a counters/ or hw_counters/ file: a
// decimal unsigned 64-bit number ("%llu"), with or without the newline. It
// does not allocate. ok is false for anything else, including the
// "N/A (no PMA)" of older kernels.
func parseCounter(b []byte) (v uint64, ok bool) {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if len(b) == 0 { // no length cap: leading zeros are fine, overflow is checked below
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
