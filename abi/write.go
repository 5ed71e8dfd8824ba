//go:build linux

package abi

// Framing of the legacy uverbs write() commands: struct ib_uverbs_cmd_hdr
// and struct ib_uverbs_ex_cmd_hdr from <rdma/ib_user_verbs.h>.
//
// Host-order fields are written little-endian: purerdma supports only
// little-endian 64-bit Linux targets (linux/amd64 and linux/arm64).

import (
	"encoding/binary"
	"fmt"

	"github.com/purerdma/rdma/internal/errs"
)

// Sizes of the write() command headers.
const (
	// CmdHdrSize is sizeof(struct ib_uverbs_cmd_hdr): command u32,
	// in_words u16, out_words u16.
	CmdHdrSize = 8

	// ExCmdHdrSize is sizeof(struct ib_uverbs_ex_cmd_hdr): response u64,
	// provider_in_words u16, provider_out_words u16, cmd_hdr_reserved u32.
	// An extended command carries it right after the cmd_hdr.
	ExCmdHdrSize = 16
)

const maxWords = 0xffff // word counts are u16

// The texts below say CmdHdrSize and ExCmdHdrSize.
const (
	_ = uint(CmdHdrSize-8) + uint(8-CmdHdrSize)
	_ = uint(ExCmdHdrSize-16) + uint(16-ExCmdHdrSize)
)

var (
	errWriteShort   error = &errs.Static{Msg: "abi: struct ib_uverbs_cmd_hdr needs 8 bytes", Err: &ErrShortBuffer}
	errWriteExShort error = &errs.Static{Msg: "abi: struct ib_uverbs_ex_cmd_hdr needs 16 bytes after the cmd_hdr", Err: &ErrShortBuffer}
	errWriteInWords error = &errs.Static{Msg: "abi: ib_uverbs_cmd_hdr: in_words*4 is not the buffer length", Err: &ErrWriteLength}
	errWriteExWords error = &errs.Static{Msg: "abi: ib_uverbs_ex_cmd_hdr: (in_words+provider_in_words)*8 is not the length after the headers", Err: &ErrWriteLength}
)

// WriteCmd is a uverbs write() command buffer as ParseWriteCmd decodes it:
// the struct ib_uverbs_cmd_hdr fields, for an extended command the struct
// ib_uverbs_ex_cmd_hdr fields, and the request bytes that follow. Core and
// Driver alias the parsed buffer.
type WriteCmd struct {
	// Command is the command word exactly as written, including
	// IB_USER_VERBS_CMD_FLAG_EXTENDED and any invalid bits; the command
	// number is Command & IB_USER_VERBS_CMD_COMMAND_MASK.
	Command uint32
	// Extended reports whether IB_USER_VERBS_CMD_FLAG_EXTENDED is set in
	// Command; it decides which framing was parsed.
	Extended bool
	// InWords is in_words: for a legacy command the whole buffer length
	// in 4-byte words, header included; for an extended command the core
	// request length in 8-byte words.
	InWords uint16
	// OutWords is out_words: for a legacy command the response buffer
	// length (core and driver parts) in 4-byte words; for an extended
	// command the core response length in 8-byte words.
	OutWords uint16
	// ProviderInWords is provider_in_words (extended only): the driver
	// request length in 8-byte words.
	ProviderInWords uint16
	// ProviderOutWords is provider_out_words (extended only): the driver
	// response length in 8-byte words.
	ProviderOutWords uint16
	// Response is response (extended only): the user address of the
	// response buffer, core part then driver part. For a legacy command
	// with a response the address is instead the first 8 bytes of Core,
	// which ParseWriteCmd cannot tell apart from other requests, so
	// Response is 0.
	Response uint64
	// Reserved is cmd_hdr_reserved (extended only); the kernel requires 0.
	Reserved uint32
	// Core is, for a legacy command, every byte after the cmd_hdr (the
	// request struct followed by any driver data: only the command's
	// fixed request size tells where one ends); for an extended command,
	// the InWords*8 bytes of core request. Nil when empty.
	Core []byte
	// Driver is, for an extended command, the ProviderInWords*8 bytes of
	// driver request after Core; nil for a legacy command or when empty.
	Driver []byte
}

// AppendWriteCmd appends a legacy (non-extended) uverbs write() command to b
// and returns the extended slice: struct ib_uverbs_cmd_hdr (command = cmd,
// in_words = total length / 4 including the 8-byte header, out_words =
// outLen / 4) followed by req and then driver. req is the command's request
// struct; for a command with a response its first 8 bytes must hold the
// response buffer's address, and outLen is that buffer's length (core
// response plus driver response), 0 for a command without one. driver is
// the provider's request data, which the kernel finds right after the fixed
// request. It allocates only when b lacks the capacity.
//
// It returns b unchanged and an error wrapping ErrWriteCommand when cmd has
// bits outside IB_USER_VERBS_CMD_COMMAND_MASK (including
// IB_USER_VERBS_CMD_FLAG_EXTENDED: use AppendExWriteCmd), or wrapping
// ErrWriteLength when 8+len(req)+len(driver) or outLen is negative, not a
// multiple of 4, or more than 0xffff words.
func AppendWriteCmd(b []byte, cmd uint32, req, driver []byte, outLen int) ([]byte, error) {
	if cmd&^IB_USER_VERBS_CMD_COMMAND_MASK != 0 {
		return b, fmt.Errorf("abi: ib_uverbs_cmd_hdr: command %#x has bits outside IB_USER_VERBS_CMD_COMMAND_MASK: %w", cmd, ErrWriteCommand)
	}
	inLen := CmdHdrSize + len(req) + len(driver)
	inWords, err := words(inLen, 4, "in_words")
	if err != nil {
		return b, err
	}
	outWords, err := words(outLen, 4, "out_words")
	if err != nil {
		return b, err
	}
	le := binary.LittleEndian
	b = le.AppendUint32(b, cmd)
	b = le.AppendUint16(b, inWords)
	b = le.AppendUint16(b, outWords)
	b = append(b, req...)
	return append(b, driver...), nil
}

// AppendExWriteCmd appends an extended uverbs write() command to b and
// returns the extended slice: struct ib_uverbs_cmd_hdr (command = cmd |
// IB_USER_VERBS_CMD_FLAG_EXTENDED, in_words = len(core)/8, out_words =
// outLen/8), struct ib_uverbs_ex_cmd_hdr (response = resp,
// provider_in_words = len(driver)/8, provider_out_words = driverOutLen/8,
// cmd_hdr_reserved = 0), then core and driver. cmd is the command number
// (such as 50 for EX_CREATE_FLOW) with or without the flag; resp is the
// address of a response buffer of outLen core bytes followed by
// driverOutLen driver bytes. The kernel wants resp = 0 exactly when both
// lengths are 0; AppendExWriteCmd leaves that rule to it. It allocates only
// when b lacks the capacity.
//
// It returns b unchanged and an error wrapping ErrWriteCommand when cmd has
// bits outside IB_USER_VERBS_CMD_COMMAND_MASK and
// IB_USER_VERBS_CMD_FLAG_EXTENDED, or wrapping ErrWriteLength when a length
// is not a multiple of 8 or is more than 0xffff words.
func AppendExWriteCmd(b []byte, cmd uint32, resp uint64, core, driver []byte, outLen, driverOutLen int) ([]byte, error) {
	if cmd&^(IB_USER_VERBS_CMD_COMMAND_MASK|IB_USER_VERBS_CMD_FLAG_EXTENDED) != 0 {
		return b, fmt.Errorf("abi: ib_uverbs_cmd_hdr: extended command %#x has bits outside IB_USER_VERBS_CMD_COMMAND_MASK: %w", cmd, ErrWriteCommand)
	}
	inWords, err := words(len(core), 8, "in_words")
	if err != nil {
		return b, err
	}
	outWords, err := words(outLen, 8, "out_words")
	if err != nil {
		return b, err
	}
	provIn, err := words(len(driver), 8, "provider_in_words")
	if err != nil {
		return b, err
	}
	provOut, err := words(driverOutLen, 8, "provider_out_words")
	if err != nil {
		return b, err
	}
	le := binary.LittleEndian
	b = le.AppendUint32(b, cmd|IB_USER_VERBS_CMD_FLAG_EXTENDED)
	b = le.AppendUint16(b, inWords)
	b = le.AppendUint16(b, outWords)
	b = le.AppendUint64(b, resp)
	b = le.AppendUint16(b, provIn)
	b = le.AppendUint16(b, provOut)
	b = le.AppendUint32(b, 0) // cmd_hdr_reserved
	b = append(b, core...)
	return append(b, driver...), nil
}

// words converts a byte length to a u16 count of unit-byte words.
func words(n, unit int, field string) (uint16, error) {
	if n < 0 || n%unit != 0 {
		return 0, fmt.Errorf("abi: %s: %d bytes is not a whole number of %d-byte words: %w", field, n, unit, ErrWriteLength)
	}
	if n/unit > maxWords {
		return 0, fmt.Errorf("abi: %s: %d bytes is more than %d words: %w", field, n, maxWords, ErrWriteLength)
	}
	return uint16(n / unit), nil
}

// ParseWriteCmd decodes a uverbs write() command buffer, the whole of what
// was passed to write(2). It is meant for a fake kernel: it parses the
// framing (extended when IB_USER_VERBS_CMD_FLAG_EXTENDED is set) and leaves
// the kernel's semantic checks to the caller: invalid command bits, unknown
// commands, cmd_hdr_reserved, the response/out_words rules and minimum
// request sizes. Core and Driver alias b; it does not allocate.
//
// It returns an error wrapping ErrShortBuffer when b is shorter than the
// 8-byte cmd_hdr, or than the 24 bytes of both headers for an extended
// command, and one wrapping ErrWriteLength when in_words*4 is not len(b)
// (legacy) or (in_words+provider_in_words)*8 is not len(b)-24 (extended).
// The kernel fails all of these with EINVAL, but only after it has looked
// up the command, so on error the returned WriteCmd still holds every header
// field b contains (Core and Driver are then nil): a fake kernel can judge
// the command word first, as the kernel does.
func ParseWriteCmd(b []byte) (WriteCmd, error) {
	var c WriteCmd
	if len(b) < CmdHdrSize {
		return c, errWriteShort
	}
	le := binary.LittleEndian
	c.Command = le.Uint32(b[0:4])
	c.Extended = c.Command&IB_USER_VERBS_CMD_FLAG_EXTENDED != 0
	c.InWords = le.Uint16(b[4:6])
	c.OutWords = le.Uint16(b[6:8])
	if !c.Extended {
		if int(c.InWords)*4 != len(b) {
			return c, errWriteInWords
		}
		c.Core = part(b, CmdHdrSize, len(b))
		return c, nil
	}
	if len(b) < CmdHdrSize+ExCmdHdrSize {
		return c, errWriteExShort
	}
	c.Response = le.Uint64(b[8:16])
	c.ProviderInWords = le.Uint16(b[16:18])
	c.ProviderOutWords = le.Uint16(b[18:20])
	c.Reserved = le.Uint32(b[20:24])
	const hdrs = CmdHdrSize + ExCmdHdrSize
	if (int(c.InWords)+int(c.ProviderInWords))*8 != len(b)-hdrs {
		return c, errWriteExWords
	}
	coreEnd := hdrs + int(c.InWords)*8
	c.Core = part(b, hdrs, coreEnd)
	c.Driver = part(b, coreEnd, len(b))
	return c, nil
}

// part returns b[i:j] with its capacity capped, or nil when empty.
func part(b []byte, i, j int) []byte {
	if i == j {
		return nil
	}
	return b[i:j:j]
}
