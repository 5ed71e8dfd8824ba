//go:build linux

package abi

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ALLOC_PD (3): request struct ib_uverbs_alloc_pd = the response address;
// response buffer = struct ib_uverbs_alloc_pd_resp (4) + 4 bytes of driver
// response (mlx5's pdn).
const (
	allocPDCmd  = 3
	allocPDResp = 0x00007f0012345678
	allocPDOut  = 8
)

// Expected bytes from ib_user_verbs.h, struct ib_uverbs_cmd_hdr and ib_uverbs_ex_cmd_hdr; uverbs_main.c, ib_uverbs_write layout (struct ib_uverbs_cmd_hdr:
// in_words counts the whole buffer, header included, in 4-byte words);
// replace with a strace capture of rdma-core once the VM test bed exists.
const allocPDHex = `
03 00 00 00  04 00 02 00
78 56 34 12  00 7f 00 00`

// EX_CREATE_FLOW (50) on QP handle 3: struct ib_uverbs_create_flow (24
// bytes, §4.1) with one TCP spec (16 bytes, dst port 4791) as core request,
// struct mlx5_ib_create_flow with one counters_data entry (24 bytes, §3.3)
// as driver request, an 8-byte struct ib_uverbs_create_flow_resp as core
// response and no driver response.
const (
	createFlowCmd  = 50
	createFlowResp = 0x00007f00deadbe00

	createFlowCoreHex = `
00 00 00 00  03 00 00 00
00 00 00 00  10 00 00 00  01 00 00 01  00 00 00 00
40 00 00 00  10 00 00 00  12 b7 00 00  ff ff 00 00`
	createFlowDriverHex = `
01 00 00 00  00 00 00 00
00 10 00 00  00 7f 00 00  02 00 00 00  00 00 00 00`

	// Expected bytes from ib_user_verbs.h, struct ib_uverbs_cmd_hdr and ib_uverbs_ex_cmd_hdr; uverbs_main.c, ib_uverbs_write layout (struct
	// ib_uverbs_cmd_hdr + struct ib_uverbs_ex_cmd_hdr, word counts in
	// 8-byte words excluding the headers); replace with a strace capture of
	// rdma-core once the VM test bed exists.
	createFlowHdrHex = `
32 00 00 80  05 00 01 00
00 be ad de  00 7f 00 00  03 00 00 00  00 00 00 00`
)

func TestAppendWriteCmdGolden(t *testing.T) {
	want := hexBytes(t, allocPDHex)
	req := want[8:]
	got, err := AppendWriteCmd([]byte{0xaa}, allocPDCmd, req, nil, allocPDOut)
	if err != nil {
		t.Fatalf("AppendWriteCmd: %v", err)
	}
	if diff := cmp.Diff(append([]byte{0xaa}, want...), got); diff != "" {
		t.Errorf("AppendWriteCmd (-want +got):\n%s", diff)
	}

	// Driver data goes straight after the request and counts in in_words.
	got, err = AppendWriteCmd(nil, allocPDCmd, req, []byte{1, 2, 3, 4}, allocPDOut)
	if err != nil {
		t.Fatalf("AppendWriteCmd with driver data: %v", err)
	}
	wantDrv := hexBytes(t, `03 00 00 00  05 00 02 00  78 56 34 12  00 7f 00 00  01 02 03 04`)
	if diff := cmp.Diff(wantDrv, got); diff != "" {
		t.Errorf("AppendWriteCmd with driver data (-want +got):\n%s", diff)
	}

	c, err := ParseWriteCmd(want)
	if err != nil {
		t.Fatalf("ParseWriteCmd: %v", err)
	}
	wantCmd := WriteCmd{Command: allocPDCmd, InWords: 4, OutWords: 2, Core: req}
	if diff := cmp.Diff(wantCmd, c); diff != "" {
		t.Errorf("ParseWriteCmd (-want +got):\n%s", diff)
	}
}

func TestAppendExWriteCmdGolden(t *testing.T) {
	core := hexBytes(t, createFlowCoreHex)
	driver := hexBytes(t, createFlowDriverHex)
	want := append(append(hexBytes(t, createFlowHdrHex), core...), driver...)

	for _, cmd := range []uint32{createFlowCmd, createFlowCmd | IB_USER_VERBS_CMD_FLAG_EXTENDED} {
		got, err := AppendExWriteCmd([]byte{0xaa}, cmd, createFlowResp, core, driver, 8, 0)
		if err != nil {
			t.Fatalf("AppendExWriteCmd(%#x): %v", cmd, err)
		}
		if diff := cmp.Diff(append([]byte{0xaa}, want...), got); diff != "" {
			t.Errorf("AppendExWriteCmd(%#x) (-want +got):\n%s", cmd, diff)
		}
	}

	c, err := ParseWriteCmd(want)
	if err != nil {
		t.Fatalf("ParseWriteCmd: %v", err)
	}
	wantCmd := WriteCmd{
		Command:         0x80000032,
		Extended:        true,
		InWords:         5,
		OutWords:        1,
		ProviderInWords: 3,
		Response:        createFlowResp,
		Core:            core,
		Driver:          driver,
	}
	if diff := cmp.Diff(wantCmd, c); diff != "" {
		t.Errorf("ParseWriteCmd (-want +got):\n%s", diff)
	}

	// A driver response length lands in provider_out_words; no request at
	// all is fine (EX_DESTROY_FLOW-like framing without data).
	got, err := AppendExWriteCmd(nil, 51, 0, nil, nil, 0, 16)
	if err != nil {
		t.Fatalf("AppendExWriteCmd(51): %v", err)
	}
	wantEmpty := hexBytes(t, `33 00 00 80  00 00 00 00  00 00 00 00 00 00 00 00  00 00 02 00  00 00 00 00`)
	if diff := cmp.Diff(wantEmpty, got); diff != "" {
		t.Errorf("AppendExWriteCmd(51) (-want +got):\n%s", diff)
	}
	c, err = ParseWriteCmd(got)
	if err != nil {
		t.Fatalf("ParseWriteCmd: %v", err)
	}
	if diff := cmp.Diff(WriteCmd{Command: 0x80000033, Extended: true, ProviderOutWords: 2}, c); diff != "" {
		t.Errorf("ParseWriteCmd empty (-want +got):\n%s", diff)
	}
}

func TestAppendWriteCmdErrors(t *testing.T) {
	tests := []struct {
		name   string
		cmd    uint32
		req    []byte
		driver []byte
		outLen int
		want   error
	}{
		{"extended-flag", 3 | IB_USER_VERBS_CMD_FLAG_EXTENDED, make([]byte, 8), nil, 8, ErrWriteCommand},
		{"command-above-mask", 0x100, make([]byte, 8), nil, 8, ErrWriteCommand},
		{"request-not-words", 3, make([]byte, 6), nil, 8, ErrWriteLength},
		{"request-plus-driver-not-words", 3, make([]byte, 8), []byte{1}, 8, ErrWriteLength},
		{"request-too-long", 3, make([]byte, 0xffff*4-8+4), nil, 8, ErrWriteLength},
		{"out-not-words", 3, make([]byte, 8), nil, 6, ErrWriteLength},
		{"out-negative", 3, make([]byte, 8), nil, -4, ErrWriteLength},
		{"out-too-long", 3, make([]byte, 8), nil, 0x10000 * 4, ErrWriteLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte{9}
			out, err := AppendWriteCmd(in, tt.cmd, tt.req, tt.driver, tt.outLen)
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
			if diff := cmp.Diff(in, out); diff != "" {
				t.Errorf("b changed on error:\n%s", diff)
			}
		})
	}
	// The largest legal sizes are accepted, and a request plus driver data
	// that is a multiple of 4 only together is fine (the kernel sees one
	// stream).
	if _, err := AppendWriteCmd(nil, 0xff, make([]byte, 0xffff*4-8), nil, 0xffff*4); err != nil {
		t.Errorf("largest command: %v", err)
	}
	if _, err := AppendWriteCmd(nil, 3, make([]byte, 6), make([]byte, 2), 0); err != nil {
		t.Errorf("split request: %v", err)
	}
}

func TestAppendExWriteCmdErrors(t *testing.T) {
	w8 := make([]byte, 8)
	tests := []struct {
		name                 string
		cmd                  uint32
		core, driver         []byte
		outLen, driverOutLen int
		want                 error
	}{
		{"command-above-mask", 0x132, w8, nil, 8, 0, ErrWriteCommand},
		{"other-high-bit", 50 | 0x40000000, w8, nil, 8, 0, ErrWriteCommand},
		{"core-not-8", 50, make([]byte, 12), nil, 8, 0, ErrWriteLength},
		{"driver-not-8", 50, w8, make([]byte, 4), 8, 0, ErrWriteLength},
		{"out-not-8", 50, w8, nil, 4, 0, ErrWriteLength},
		{"driver-out-not-8", 50, w8, nil, 8, 12, ErrWriteLength},
		{"driver-out-negative", 50, w8, nil, 8, -8, ErrWriteLength},
		{"core-too-long", 50, make([]byte, 0x10000*8), nil, 8, 0, ErrWriteLength},
		{"driver-too-long", 50, w8, make([]byte, 0x10000*8), 8, 0, ErrWriteLength},
		{"out-too-long", 50, w8, nil, 0x10000 * 8, 0, ErrWriteLength},
		{"driver-out-too-long", 50, w8, nil, 8, 0x10000 * 8, ErrWriteLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte{9}
			out, err := AppendExWriteCmd(in, tt.cmd, 0x1000, tt.core, tt.driver, tt.outLen, tt.driverOutLen)
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
			if diff := cmp.Diff(in, out); diff != "" {
				t.Errorf("b changed on error:\n%s", diff)
			}
		})
	}
	if _, err := AppendExWriteCmd(nil, 0xff, 1, make([]byte, 0xffff*8), make([]byte, 0xffff*8), 0xffff*8, 0xffff*8); err != nil {
		t.Errorf("largest command: %v", err)
	}
}

func TestParseWriteCmdErrors(t *testing.T) {
	exHdr := hexBytes(t, createFlowHdrHex) // says 5+3 words follow
	tests := []struct {
		name string
		b    []byte
		want error
		// header fields that must still be reported
		cmd WriteCmd
	}{
		{"nil", nil, ErrShortBuffer, WriteCmd{}},
		{"7-bytes", []byte{3, 0, 0, 0, 2, 0, 0}, ErrShortBuffer, WriteCmd{}},
		{
			"in-words-too-small",
			hexBytes(t, `03 00 00 00  03 00 02 00  78 56 34 12  00 7f 00 00`),
			ErrWriteLength,
			WriteCmd{Command: 3, InWords: 3, OutWords: 2},
		},
		{
			"in-words-too-big",
			hexBytes(t, `03 00 00 00  05 00 02 00  78 56 34 12  00 7f 00 00`),
			ErrWriteLength,
			WriteCmd{Command: 3, InWords: 5, OutWords: 2},
		},
		{
			"in-words-zero",
			hexBytes(t, `ff ff ff 7f  00 00 00 00`),
			ErrWriteLength,
			WriteCmd{Command: 0x7fffffff},
		},
		{
			"ex-no-ex-hdr",
			hexBytes(t, `32 00 00 80  05 00 01 00  00 00 00 00`),
			ErrShortBuffer,
			WriteCmd{Command: 0x80000032, Extended: true, InWords: 5, OutWords: 1},
		},
		{
			"ex-words-disagree",
			append(append([]byte(nil), exHdr...), make([]byte, 56)...),
			ErrWriteLength,
			WriteCmd{
				Command: 0x80000032, Extended: true, InWords: 5, OutWords: 1,
				ProviderInWords: 3, Response: createFlowResp,
			},
		},
		{
			"ex-words-disagree-reserved",
			hexBytes(t, `32 00 00 80  01 00 00 00  00 00 00 00 00 00 00 00  00 00 00 00  01 00 00 00`),
			ErrWriteLength,
			WriteCmd{Command: 0x80000032, Extended: true, InWords: 1, Reserved: 1},
		},
		{
			"ex-max-words-overflow-free",
			hexBytes(t, `32 00 00 80  ff ff ff ff  00 00 00 00 00 00 00 00  ff ff ff ff  00 00 00 00`),
			ErrWriteLength,
			WriteCmd{
				Command: 0x80000032, Extended: true, InWords: 0xffff, OutWords: 0xffff,
				ProviderInWords: 0xffff, ProviderOutWords: 0xffff,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseWriteCmd(tt.b)
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
			if diff := cmp.Diff(tt.cmd, c); diff != "" {
				t.Errorf("header fields on error (-want +got):\n%s", diff)
			}
		})
	}
}

// ParseWriteCmd leaves semantic checks to the caller: bad command bits and
// a non-zero cmd_hdr_reserved parse fine.
func TestParseWriteCmdNoSemantics(t *testing.T) {
	c, err := ParseWriteCmd(hexBytes(t, `03 01 00 00  02 00 00 00`))
	if err != nil {
		t.Fatalf("ParseWriteCmd: %v", err)
	}
	if diff := cmp.Diff(WriteCmd{Command: 0x103, InWords: 2}, c); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	c, err = ParseWriteCmd(hexBytes(t, `32 00 00 80  00 00 00 00  00 00 00 00 00 00 00 00  00 00 00 00  ff ff ff ff`))
	if err != nil {
		t.Fatalf("ParseWriteCmd: %v", err)
	}
	if diff := cmp.Diff(WriteCmd{Command: 0x80000032, Extended: true, Reserved: 0xffffffff}, c); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseWriteCmdAliases(t *testing.T) {
	b, err := AppendExWriteCmd(nil, 50, 0, make([]byte, 8), make([]byte, 8), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseWriteCmd(b)
	if err != nil {
		t.Fatal(err)
	}
	if &c.Core[0] != &b[24] || &c.Driver[0] != &b[32] {
		t.Errorf("Core/Driver do not alias the buffer")
	}
	if cap(c.Core) != 8 || cap(c.Driver) != 8 {
		t.Errorf("cap(Core), cap(Driver) = %d, %d, want 8, 8", cap(c.Core), cap(c.Driver))
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseWriteCmd(b) }); n != 0 {
		t.Errorf("ParseWriteCmd: %v allocs, want 0", n)
	}
}
