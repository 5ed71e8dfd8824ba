package uverbs

// Fuzz targets for the decoders of decode.go. The oracle for each record
// is the generated abi struct laid over the same bytes (the C layout,
// pinned by abi's layout tests), not the decoder's own offsets: a decode
// must succeed exactly when the length is right and then agree with it
// field by field.

import (
	"bytes"
	"errors"
	"syscall"
	"testing"
	"unsafe"

	"github.com/purerdma/rdma/abi"
)

// overlay copies b into a fresh T, as the kernel's copy_to_user would.
func overlay[T any](b []byte) T {
	var v T
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v)), b)
	return v
}

func FuzzDecodeAsyncEventDesc(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 16))
	f.Add([]byte{0x2a, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0}) // port 42 active
	f.Add(bytes.Repeat([]byte{0xff}, 17))
	f.Fuzz(func(t *testing.T, b []byte) {
		elem, typ, err := decodeAsyncEventDesc(b)
		if len(b) != int(unsafe.Sizeof(abi.IbUverbsAsyncEventDesc{})) {
			if !errors.Is(err, syscall.EPROTO) {
				t.Fatalf("%d bytes: err %v, want EPROTO", len(b), err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%d bytes: %v", len(b), err)
		}
		want := overlay[abi.IbUverbsAsyncEventDesc](b)
		if elem != want.Element || uint32(typ) != want.EventType {
			t.Fatalf("decoded (%#x, %d), want (%#x, %d)", elem, typ, want.Element, want.EventType)
		}
		_ = typ.String() // every value has a name or a number, without panicking
	})
}

func FuzzDecodeCompEventDesc(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(make([]byte, 9))
	f.Fuzz(func(t *testing.T, b []byte) {
		uh, err := decodeCompEventDesc(b)
		if len(b) != int(unsafe.Sizeof(abi.IbUverbsCompEventDesc{})) {
			if !errors.Is(err, syscall.EPROTO) {
				t.Fatalf("%d bytes: err %v, want EPROTO", len(b), err)
			}
			return
		}
		if want := overlay[abi.IbUverbsCompEventDesc](b); err != nil || uh != want.CqHandle {
			t.Fatalf("decoded (%#x, %v), want %#x", uh, err, want.CqHandle)
		}
	})
}

func FuzzDecodeGIDEntry(f *testing.F) {
	f.Add([]byte{})
	// rxe0's GID 0 on the VM: fe80::..., index 0, port 1, RoCE v1, ifindex 3.
	f.Add(append(append([]byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55},
		0, 0, 0, 0, 1, 0, 0, 0), 0, 0, 0, 0, 3, 0, 0, 0))
	f.Add(bytes.Repeat([]byte{0xa5}, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeGIDEntry(b)
		if len(b) < int(unsafe.Sizeof(abi.IbUverbsGidEntry{})) {
			if !errors.Is(err, syscall.EPROTO) {
				t.Fatalf("%d bytes: err %v, want EPROTO", len(b), err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%d bytes: %v", len(b), err)
		}
		want := overlay[abi.IbUverbsGidEntry](b)
		gid := overlay[[2]uint64](e.GID[:])
		if gid != want.Gid || uint32(e.Index) != want.GidIndex || uint32(e.Port) != want.PortNum ||
			uint32(e.Type) != want.GidType || e.NetdevIfindex != want.NetdevIfindex {
			t.Fatalf("decoded %+v, want %+v", e, want)
		}
		_ = e.GID.String()
	})
}
