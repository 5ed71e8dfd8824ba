package abi

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzMadHdr decodes arbitrary bytes as a 64- or 56-byte umad header. A
// header that decodes must either be refused by Encode for a documented
// reason (a QPN or flow label wider than the hardware uses) or re-encode to
// the input bytes, reserved bytes zeroed and grh_present normalized to 0/1,
// and decode again to the same value.
func FuzzMadHdr(f *testing.F) {
	f.Add(hexBytes(f, grhSendHdrHex), true)
	f.Add(hexBytes(f, grhSendHdrHex)[:MadHdrSizeOld], false)
	f.Add(hexBytes(f, lidRecvHdrHex), true)
	f.Add(hexBytes(f, lidRecvHdrHex), false)
	f.Add([]byte{1, 2, 3}, true)
	f.Fuzz(func(t *testing.T, b []byte, newFormat bool) {
		size := MadHdrSizeOld
		if newFormat {
			size = MadHdrSize
		}
		var h MadHdr
		if err := h.Decode(b, size); err != nil {
			if len(b) >= size || !errors.Is(err, ErrShortBuffer) {
				t.Fatalf("Decode of %d bytes: %v", len(b), err)
			}
			return
		}
		enc := make([]byte, size)
		if err := h.Encode(enc, size); err != nil {
			if !errors.Is(err, ErrRange) || (h.QPN <= maxQPN && h.FlowLabel <= maxFlowLabel) {
				t.Fatalf("Encode of decoded %+v: %v", h, err)
			}
			return
		}
		want := append([]byte(nil), b[:size]...)
		if want[32] != 0 {
			want[32] = 1
		}
		if size == MadHdrSize {
			clear(want[58:64])
		}
		if diff := cmp.Diff(want, enc); diff != "" {
			t.Fatalf("re-encoded bytes (-want +got):\n%s", diff)
		}
		var h2 MadHdr
		if err := h2.Decode(enc, size); err != nil {
			t.Fatalf("Decode of re-encoded: %v", err)
		}
		if diff := cmp.Diff(h, h2); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}

// FuzzRegReq2 decodes arbitrary bytes as struct ib_user_mad_reg_req2; what
// decodes must re-encode to the input (res and reserved zeroed) unless its
// OUI is wider than 24 bits, and decode again to the same value.
func FuzzRegReq2(f *testing.F) {
	f.Add(hexBytes(f, vendorRegReq2Hex))
	f.Add(make([]byte, RegReq2Size+3))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r RegReq2
		if err := r.Decode(b); err != nil {
			if len(b) >= RegReq2Size || !errors.Is(err, ErrShortBuffer) {
				t.Fatalf("Decode of %d bytes: %v", len(b), err)
			}
			return
		}
		enc, err := r.AppendTo(nil)
		if err != nil {
			if !errors.Is(err, ErrRange) || r.OUI <= maxOUI {
				t.Fatalf("AppendTo of decoded %+v: %v", r, err)
			}
			return
		}
		want := append([]byte(nil), b[:RegReq2Size]...)
		clear(want[10:12])
		clear(want[37:40])
		if diff := cmp.Diff(want, enc); diff != "" {
			t.Fatalf("re-encoded bytes (-want +got):\n%s", diff)
		}
		var r2 RegReq2
		if err := r2.Decode(enc); err != nil {
			t.Fatalf("Decode of re-encoded: %v", err)
		}
		if diff := cmp.Diff(r, r2); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}

// FuzzRegReq decodes arbitrary bytes as struct ib_user_mad_reg_req; what
// decodes always re-encodes to the input (padding zeroed) and decodes again
// to the same value.
func FuzzRegReq(f *testing.F) {
	f.Add(hexBytes(f, vendorRegReqHex))
	f.Add(make([]byte, RegReqSize))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r RegReq
		if err := r.Decode(b); err != nil {
			if len(b) >= RegReqSize || !errors.Is(err, ErrShortBuffer) {
				t.Fatalf("Decode of %d bytes: %v", len(b), err)
			}
			return
		}
		enc, err := r.AppendTo(nil)
		if err != nil {
			t.Fatalf("AppendTo of decoded %+v: %v", r, err)
		}
		want := append([]byte(nil), b[:RegReqSize]...)
		want[27] = 0
		if diff := cmp.Diff(want, enc); diff != "" {
			t.Fatalf("re-encoded bytes (-want +got):\n%s", diff)
		}
		var r2 RegReq
		if err := r2.Decode(enc); err != nil {
			t.Fatalf("Decode of re-encoded: %v", err)
		}
		if diff := cmp.Diff(r, r2); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}
