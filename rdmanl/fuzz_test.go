package rdmanl

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/sysfs"
)

// Fuzz targets for the decoders (with those of stat_test.go): no panic on
// any input, and what decodes re-encodes to bytes that decode to the same
// value.

func FuzzDecodeDevice(f *testing.F) {
	f.Add(encodeDevice(Device{Index: 0, Name: "rxe0", NumPorts: 1, NodeGUID: 0xacade8fffe375f42, SysImageGUID: 0xacade8fffe375f42,
		NodeType: ptr(rdma.NodeCA), Protocol: ptr("roce"), CapFlags: ptr[uint64](0x1223c76)}, false))
	f.Add(encodeDevice(Device{Index: 7, Name: "mlx5_0", NumPorts: 2, NodeGUID: 1, SysImageGUID: 2, FWVersion: ptr("20.31.1014")}, true))
	f.Add([]byte{8, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeDevice(b)
		if err != nil {
			return
		}
		for _, pad := range []bool{false, true} {
			// A name with a NUL inside cannot be re-encoded as it was;
			// decoding stops at the first NUL, so re-encoding is exact.
			d2, err := decodeDevice(encodeDevice(d, pad))
			if err != nil {
				t.Fatalf("re-decode: %v", err)
			}
			if diff := cmp.Diff(d, d2); diff != "" {
				t.Fatalf("round trip (pad %v):\n%s", pad, diff)
			}
		}
	})
}

func FuzzDecodeChardev(f *testing.F) {
	f.Add(encodeChardev(Chardev{Name: "uverbs0", Dev: sysfs.DevNumber{Major: 231, Minor: 192}, ABI: 2, DriverID: ptr(rdma.DriverRXE)}, false))
	f.Add(encodeChardev(Chardev{Name: "umad1", Dev: sysfs.DevNumber{Major: 231, Minor: 1}, ABI: 5}, true))
	f.Add([]byte{6, 0, 0x49, 0, 1, 2, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeChardev(b)
		if err != nil {
			return
		}
		if c.Dev.Major > 0xfff || c.Dev.Minor > 0xfffff {
			t.Fatalf("device number %v outside 12:20 bits", c.Dev)
		}
		for _, pad := range []bool{false, true} {
			c2, err := decodeChardev(encodeChardev(c, pad))
			if err != nil {
				t.Fatalf("re-decode: %v", err)
			}
			if diff := cmp.Diff(c, c2); diff != "" {
				t.Fatalf("round trip (pad %v):\n%s", pad, diff)
			}
		}
	})
}

func FuzzDecodePortStats(f *testing.F) {
	f.Add(encodePortStats(Stats{Device: "rxe0", Port: 1, Counters: []NamedCounter{{"sent_pkts", 25019}, {"rcvd_pkts", 1}}}, false))
	f.Add(encodePortStats(Stats{Device: "mlx5_0", Index: 3, Port: 2, Counters: []NamedCounter{{"np_cnp_sent", math.MaxUint64}}}, true))
	f.Add(encodePortStats(Stats{Device: "x", Port: 1}, false))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodePortStats(b)
		if err != nil {
			return
		}
		for _, pad := range []bool{false, true} {
			s2, err := decodePortStats(encodePortStats(s, pad))
			if err != nil {
				t.Fatalf("re-decode: %v", err)
			}
			if diff := cmp.Diff(s, s2); diff != "" {
				t.Fatalf("round trip (pad %v):\n%s", pad, diff)
			}
		}
	})
}
