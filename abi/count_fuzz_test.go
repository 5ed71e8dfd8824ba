//go:build linux

package abi

import (
	"errors"
	"testing"
)

// The fuzz targets of every exported abi function that takes a count, an
// index or a length from its caller: whatever the number (negative, past
// the buffer, past the wire field), the call returns an error and never
// panics or allocates for it.

// FuzzDecodeIoctlAttr: any index into any buffer. (It found that an index
// of 1<<62 wrapped the offset back to attribute 0.)
func FuzzDecodeIoctlAttr(f *testing.F) {
	f.Add(make([]byte, IoctlHdrSize+2*IoctlAttrSize), 1)
	f.Add(make([]byte, IoctlHdrSize), 0)
	f.Add([]byte{}, -1)
	f.Add(make([]byte, 64), 1<<62)
	f.Fuzz(func(t *testing.T, b []byte, i int) {
		_, err := DecodeIoctlAttr(b, i)
		// Attribute i ends at IoctlHdrSize+(i+1)*IoctlAttrSize, computed
		// here in uint64 so it cannot wrap.
		fits := i >= 0 && uint64(IoctlHdrSize)+(uint64(i)+1)*IoctlAttrSize <= uint64(len(b)) && uint64(i) < 1<<32
		if (err == nil) != fits {
			t.Fatalf("DecodeIoctlAttr(%d bytes, %d): %v, want fits=%v", len(b), i, err, fits)
		}
	})
}

// FuzzWriteCmdLength: AppendWriteCmd and AppendExWriteCmd with any output
// lengths and request sizes either encode (lengths that are multiples of
// the word and fit 16 bits) or fail with ErrWriteLength, leaving b alone.
func FuzzWriteCmdLength(f *testing.F) {
	f.Add(uint32(3), 8, 16, 0)
	f.Add(uint32(50), 24, -8, 8)
	f.Add(uint32(3), 4, 1<<40, -1)
	f.Fuzz(func(t *testing.T, cmd uint32, reqLen, outLen, drvOut int) {
		cmd &= IB_USER_VERBS_CMD_COMMAND_MASK
		reqLen = reqLen & 0x3ffff // request bytes are real memory: keep them small
		req := make([]byte, reqLen)
		b := []byte{1, 2, 3}
		out, err := AppendWriteCmd(b, cmd, req, nil, outLen)
		inOK := (CmdHdrSize+reqLen)%4 == 0 && (CmdHdrSize+reqLen)/4 <= 0xffff
		outOK := outLen >= 0 && outLen%4 == 0 && outLen/4 <= 0xffff
		if (err == nil) != (inOK && outOK) {
			t.Fatalf("AppendWriteCmd(req %d, out %d): %v", reqLen, outLen, err)
		}
		if err != nil && (!errors.Is(err, ErrWriteLength) || len(out) != 3) {
			t.Fatalf("AppendWriteCmd error %v, b grew to %d", err, len(out))
		}
		out, err = AppendExWriteCmd(b, cmd, 0, req, nil, outLen, drvOut)
		ok8 := func(n int) bool { return n >= 0 && n%8 == 0 && n/8 <= 0xffff }
		if (err == nil) != (ok8(reqLen) && ok8(outLen) && ok8(drvOut)) {
			t.Fatalf("AppendExWriteCmd(core %d, out %d, driver out %d): %v", reqLen, outLen, drvOut, err)
		}
		if err != nil && (!errors.Is(err, ErrWriteLength) || len(out) != 3) {
			t.Fatalf("AppendExWriteCmd error %v, b grew to %d", err, len(out))
		}
	})
}

// FuzzMadHdrSize: Encode, AppendTo and Decode with any header size.
func FuzzMadHdrSize(f *testing.F) {
	f.Add(make([]byte, 64), 64)
	f.Add(make([]byte, 64), 56)
	f.Add(make([]byte, 8), -1)
	f.Add(make([]byte, 8), 1<<40)
	f.Fuzz(func(t *testing.T, b []byte, size int) {
		valid := size == MadHdrSize || size == MadHdrSizeOld
		var h MadHdr
		err := h.Decode(b, size)
		if !valid && !errors.Is(err, ErrMadHdrSize) {
			t.Fatalf("Decode(size %d): %v, want ErrMadHdrSize", size, err)
		}
		var z MadHdr
		if _, err := z.AppendTo(nil, size); (err == nil) != valid {
			t.Fatalf("AppendTo(size %d): %v", size, err)
		}
		if err := z.Encode(b, size); !valid && !errors.Is(err, ErrMadHdrSize) {
			t.Fatalf("Encode(size %d): %v, want ErrMadHdrSize", size, err)
		}
	})
}
