package umad

import (
	"errors"
	"fmt"

	"github.com/purerdma/rdma/internal/errs"
)

// Errors returned by the MAD codecs (the mad*.go files of this package). The
// codecs wrap them with the name of the structure involved; test for them
// with [errors.Is]. Decoders return static values, so a failing decode does
// not allocate either.
var (
	// ErrShortMAD is returned when a decoder's input is shorter than the
	// layout it decodes: a MAD shorter than MADSize (256) bytes, a common
	// header shorter than MADHeaderSize (24), or attribute data shorter
	// than the attribute.
	ErrShortMAD = errors.New("MAD too short")

	// ErrLongMAD is returned when a MAD decoder is given more than MADSize
	// (256) bytes: an RMPP message reassembled by the kernel or an OPA MAD,
	// neither of which is one IBA MAD.
	ErrLongMAD = errors.New("longer than one 256-byte MAD")

	// ErrBaseVersion is returned when a class-specific MAD decoder is
	// given a MAD whose BaseVersion is not BaseVersion (1). DecodeMAD
	// returns such MADs as a *RawMAD instead.
	ErrBaseVersion = errors.New("unsupported MAD base version")

	// ErrWrongClass is returned when a class-specific MAD decoder (SMP,
	// PerfMAD, VendorMAD) is given a MAD of another management class.
	ErrWrongClass = errors.New("wrong management class for this MAD type")

	// ErrUnknownAttribute is returned by DecodeAttribute for a (class,
	// attribute) pair that has no Go type in this package.
	ErrUnknownAttribute = errors.New("no decoder for this attribute")

	// ErrFieldRange is returned by Validate and MarshalBinary when a
	// field holds a value wider than its wire field (a 4-bit PortInfo
	// field above 15, a 24-bit OUI or QPN above 0xFFFFFF, ...) or a
	// field the MAD's layout does not carry (hop fields in a LID-routed
	// SMP), and by setters given more than a field holds. Append does not
	// check: it writes each field modulo its width.
	ErrFieldRange = errors.New("value does not fit its MAD field")

	// ErrAttributeSize is returned by SetAttribute when the attribute does
	// not fit the MAD's data area.
	ErrAttributeSize = errors.New("attribute larger than the MAD's data area")
)

// madError wraps one of the sentinels above with the structure it
// concerns: "umad: what: " and the sentinel's text (errs.Static, which
// holds the sentinel variable's address). The package-level decoder
// errors made with it are laid out as data by the compiler (no code
// builds them at start: TestStartupBuildsNoTables); the validation paths
// call it too (allocating, but rare).
func madError(what string, sentinel *error) error {
	return &errs.Static{Msg: "umad: " + what, Err: sentinel}
}

// rangeError reports a field value that does not fit width bits.
func rangeError(what, field string, v uint64, width int) error {
	return fmt.Errorf("umad: %s: %s %#x does not fit %d bits: %w", what, field, v, width, ErrFieldRange)
}

// unusedError reports a field that is set although the MAD's layout does
// not carry it.
func unusedError(what, field string, v uint64) error {
	return fmt.Errorf("umad: %s: %s is %#x, but this MAD does not carry it: %w", what, field, v, ErrFieldRange)
}
