//go:build linux

package abi

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParseWriteCmd parses arbitrary bytes as a uverbs write() command. It
// must never panic; what parses must re-encode, through AppendWriteCmd or
// AppendExWriteCmd, to the input bytes (cmd_hdr_reserved zeroed), unless
// the command word has bits the encoders refuse.
func FuzzParseWriteCmd(f *testing.F) {
	f.Add(hexBytes(f, allocPDHex))
	f.Add(append(append(hexBytes(f, createFlowHdrHex), hexBytes(f, createFlowCoreHex)...), hexBytes(f, createFlowDriverHex)...))
	f.Add(hexBytes(f, `33 00 00 80  00 00 00 00  00 00 00 00 00 00 00 00  00 00 02 00  07 00 00 00`))
	f.Add([]byte{3, 0, 0, 0, 2, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseWriteCmd(b)
		if err != nil {
			if !errors.Is(err, ErrShortBuffer) && !errors.Is(err, ErrWriteLength) {
				t.Fatalf("unexpected error %v", err)
			}
			if c.Core != nil || c.Driver != nil {
				t.Fatalf("Core/Driver set on error")
			}
			return
		}
		var enc []byte
		if c.Extended {
			enc, err = AppendExWriteCmd(nil, c.Command, c.Response, c.Core, c.Driver,
				int(c.OutWords)*8, int(c.ProviderOutWords)*8)
		} else {
			enc, err = AppendWriteCmd(nil, c.Command, c.Core, nil, int(c.OutWords)*4)
		}
		if err != nil {
			if !errors.Is(err, ErrWriteCommand) {
				t.Fatalf("re-encode of %+v: %v", c, err)
			}
			valid := uint32(IB_USER_VERBS_CMD_COMMAND_MASK)
			if c.Extended {
				valid |= IB_USER_VERBS_CMD_FLAG_EXTENDED
			}
			if c.Command&^valid == 0 {
				t.Fatalf("re-encode refused a valid command word %#x: %v", c.Command, err)
			}
			return
		}
		want := append([]byte(nil), b...)
		if c.Extended {
			clear(want[20:24])
		}
		if diff := cmp.Diff(want, enc); diff != "" {
			t.Fatalf("re-encoded bytes (-want +got):\n%s", diff)
		}
		c2, err := ParseWriteCmd(enc)
		if err != nil {
			t.Fatalf("parse of re-encoded: %v", err)
		}
		c.Reserved = 0
		if diff := cmp.Diff(c, c2); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}
