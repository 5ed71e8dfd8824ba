package abi

import "errors"

// Errors returned by the umad and write-command codecs (umad.go, write.go).
// The codecs wrap them with the name of the C struct involved; test for them
// with [errors.Is].
var (
	// ErrShortBuffer is returned when a decoder's input, or the destination
	// of an Encode method, is shorter than the structure.
	ErrShortBuffer = errors.New("buffer too short")

	// ErrMadHdrSize is returned when a umad header size is neither
	// MadHdrSizeOld (56) nor MadHdrSize (64).
	ErrMadHdrSize = errors.New("umad header size must be 56 or 64")

	// ErrRange is returned when an encoder is given a field value the wire
	// field cannot carry, or one the kernel would silently truncate (a QPN
	// or OUI wider than 24 bits, a flow label wider than 20 bits, more
	// words than a u16 word count holds).
	ErrRange = errors.New("value out of range")

	// ErrWriteCommand is returned when a uverbs write command word has bits
	// set outside IB_USER_VERBS_CMD_COMMAND_MASK (and, for extended
	// commands, IB_USER_VERBS_CMD_FLAG_EXTENDED).
	ErrWriteCommand = errors.New("invalid uverbs write command number")

	// ErrWriteLength is returned when a uverbs write command's request or
	// response size is not a whole number of words (4 bytes for legacy
	// commands, 8 for extended ones), or when a command buffer's word
	// counts disagree with its length.
	ErrWriteLength = errors.New("invalid uverbs write command length")
)
