package uverbs

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/purerdma/rdma/abi"
)

// The decoders of what the kernel hands back as bytes. Each checks the
// length first and reports a short record as EPROTO instead of reading
// past it; fuzz_test.go holds their fuzz targets.

// The record sizes, from the generated types (whose sizes abi's layout
// tests pin to the C compiler's).
const (
	asyncEventDescSize = int(unsafe.Sizeof(abi.IbUverbsAsyncEventDesc{}))
	compEventDescSize  = int(unsafe.Sizeof(abi.IbUverbsCompEventDesc{}))
	gidEntrySize       = int(unsafe.Sizeof(abi.IbUverbsGidEntry{}))
)

// decodeAsyncEventDesc decodes struct ib_uverbs_async_event_desc
// {__aligned_u64 element; __u32 event_type; __u32 reserved;}.
func decodeAsyncEventDesc(b []byte) (element uint64, typ EventType, err error) {
	if len(b) != asyncEventDescSize {
		return 0, 0, fmt.Errorf("read %d bytes of the %d of struct ib_uverbs_async_event_desc: %w", len(b), asyncEventDescSize, syscall.EPROTO)
	}
	return binary.LittleEndian.Uint64(b[0:]), EventType(binary.LittleEndian.Uint32(b[8:])), nil
}

// decodeCompEventDesc decodes struct ib_uverbs_comp_event_desc
// {__aligned_u64 cq_handle;}: the user handle of the CQ.
func decodeCompEventDesc(b []byte) (uint64, error) {
	if len(b) != compEventDescSize {
		return 0, fmt.Errorf("read %d bytes of the %d of struct ib_uverbs_comp_event_desc: %w", len(b), compEventDescSize, syscall.EPROTO)
	}
	return binary.LittleEndian.Uint64(b), nil
}

// decodeGIDEntry decodes struct ib_uverbs_gid_entry {__aligned_u64
// gid[2]; __u32 gid_index, port_num, gid_type, netdev_ifindex;}. The GID
// is in network order, as the kernel stores it.
func decodeGIDEntry(b []byte) (GIDEntry, error) {
	if len(b) < gidEntrySize {
		return GIDEntry{}, fmt.Errorf("%d bytes of the %d of struct ib_uverbs_gid_entry: %w", len(b), gidEntrySize, syscall.EPROTO)
	}
	return gidEntryAt(b), nil
}

// gidEntryAt decodes the entry at the start of b, which holds at least
// gidEntrySize bytes.
func gidEntryAt(b []byte) GIDEntry {
	b = b[:gidEntrySize]
	e := GIDEntry{
		Index:         int(binary.LittleEndian.Uint32(b[16:])),
		Port:          int(binary.LittleEndian.Uint32(b[20:])),
		Type:          GIDType(binary.LittleEndian.Uint32(b[24:])),
		NetdevIfindex: binary.LittleEndian.Uint32(b[28:]),
	}
	copy(e.GID[:], b[:16])
	return e
}
