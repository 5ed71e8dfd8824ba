package umad

// Golden vectors for the MAD codecs.
//
// Source of every vector in this file: written out by hand, byte by byte,
// from the IBA Volume 1 layouts (common MAD header and vendor MADs 13.4.2,
// SMPs 14.2.1.1 and 14.2.1.2, NodeInfo and PortInfo 14.2.5, ClassPortInfo
// 13.4.8.1, PerfMgmt MAD, PortCounters and PortCountersExtended 16.1, RMPP
// 13.6) as transcribed by rdma-core's libibmad/fields.c (bit offsets) and
// the kernel's include/rdma/ib_mad.h, ib_smi.h and ib_pma.h (byte
// layouts). The values
// are chosen so that every field, and every half of a packed byte, holds a
// different pattern: a field read from the wrong offset or nibble shows.
// They are not captures. Replace them with captures of rdma-core's
// perfquery and smpquery (umad read/write payloads) once the Soft-RoCE
// capture helper in integration/ exists. Note that rxe has neither SMA nor
// PMA (no process_mad, and QP0 does not exist on RoCE): no smpquery capture
// can come from it, and an unclaimed Get(PortCounters) is answered by the
// kernel's MAD layer itself with a GetResp of status 0x000c
// (drivers/infiniband/core/mad.c, ib_mad_recv_done and
// generate_unmatched_resp), which is worth capturing too.

import (
	"encoding/hex"
	"strings"
	"testing"
)

// madHex turns "05 00 ff" (whitespace, newlines and "|" ignored, "#" to the
// end of a line a comment) into bytes.
func madHex(t testing.TB, s string) []byte {
	t.Helper()
	var clean strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		clean.WriteString(strings.NewReplacer("|", "", " ", "", "\t", "").Replace(line))
	}
	b, err := hex.DecodeString(clean.String())
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// madPad returns b followed by zero bytes up to n bytes.
func madPad(b []byte, n int) []byte {
	out := make([]byte, n)
	copy(out, b)
	return out
}

// Common header: a GetResp with every field distinct, Reserved and
// ClassSpecific included, so that a swapped or misplaced word shows.
var madHeaderVec = MADHeader{
	BaseVersion:       1,
	MgmtClass:         ClassPerfMgmt,
	ClassVersion:      1,
	Method:            MethodGetResp,
	Status:            StatusMethodAttrUnsupported,
	ClassSpecific:     0xabcd,
	TransactionID:     0x1122334455667788,
	AttributeID:       PMAttrPortCounters,
	Reserved:          0x1234,
	AttributeModifier: 0xdeadbeef,
}

const madHeaderHex = `
01 04 01 81              # BaseVersion 1, MgmtClass 0x04, ClassVersion 1, Method 0x81 (R bit + Get)
00 0c ab cd              # Status 0x000c (code 3), ClassSpecific 0xabcd
11 22 33 44 55 66 77 88  # TransactionID
00 12 12 34              # AttributeID 0x0012 (PortCounters), Reserved 0x1234
de ad be ef              # AttributeModifier
`

// PortInfo: bit offsets of the IBA PortInfo table (libibmad IB_PORT_*_F and the
// later IB_PORT_CAPMASK2_F, IB_PORT_LINK_SPEED_EXT_*_F and XDR
// IB_PORT_LINK_SPEED_EXT_*2_F), byte by byte.
var madPortInfoVec = PortInfo{
	MKey:                                0x0102030405060708,
	GIDPrefix:                           0xfe80000000000000,
	LID:                                 0x0011,
	MasterSMLID:                         0x0001,
	CapabilityMask:                      0x02514868,
	DiagCode:                            0x0a0b,
	MKeyLeasePeriod:                     0x0c0d,
	LocalPortNum:                        1,
	LinkWidthEnabled:                    0x03,
	LinkWidthSupported:                  0x17,
	LinkWidthActive:                     0x02,
	LinkSpeedSupported:                  0x7,
	PortState:                           0x4,
	PortPhysicalState:                   0x5,
	LinkDownDefaultState:                0x2,
	MKeyProtectBits:                     0x2,
	LMC:                                 0x5,
	LinkSpeedActive:                     0x4,
	LinkSpeedEnabled:                    0x7,
	NeighborMTU:                         0x5,
	MasterSMSL:                          0x3,
	VLCap:                               0x4,
	InitType:                            0x9,
	VLHighLimit:                         0x21,
	VLArbitrationHighCap:                0x08,
	VLArbitrationLowCap:                 0x09,
	InitTypeReply:                       0xa,
	MTUCap:                              0x5,
	VLStallCount:                        0x7,
	HOQLife:                             0x13,
	OperationalVLs:                      0x3,
	PartitionEnforcementInbound:         true,
	PartitionEnforcementOutbound:        false,
	FilterRawInbound:                    true,
	FilterRawOutbound:                   false,
	MKeyViolations:                      0x3132,
	PKeyViolations:                      0x3334,
	QKeyViolations:                      0x3536,
	GUIDCap:                             0x20,
	ClientReregister:                    true,
	MulticastPKeyTrapSuppressionEnabled: 0x2,
	SubnetTimeOut:                       0x12,
	RespTimeValue:                       0x11,
	LocalPhyErrors:                      0xc,
	OverrunErrors:                       0x3,
	MaxCreditHint:                       0x4142,
	LinkSpeedExtActive2:                 0x1,
	LinkSpeedExtSupported2:              0x3,
	LinkSpeedExtEnabled2:                0x5,
	LinkRoundTripLatency:                0x456789,
	CapabilityMask2:                     0x0054,
	LinkSpeedExtActive:                  0x1,
	LinkSpeedExtSupported:               0x3,
	LinkSpeedExtEnabled:                 0x1e,
}

const madPortInfoHex = `
01 02 03 04 05 06 07 08  # bits 0-63     M_Key
fe 80 00 00 00 00 00 00  # bits 64-127   GidPrefix
00 11                    # bits 128-143  LID 0x0011
00 01                    # bits 144-159  MasterSMLID 0x0001
02 51 48 68              # bits 160-191  CapabilityMask
0a 0b                    # bits 192-207  DiagCode
0c 0d                    # bits 208-223  M_KeyLeasePeriod
01                       # bits 224-231  LocalPortNum 1
03                       # bits 232-239  LinkWidthEnabled
17                       # bits 240-247  LinkWidthSupported
02                       # bits 248-255  LinkWidthActive
74                       # bits 256-259  LinkSpeedSupported 7 | 260-263 PortState 4
52                       # bits 264-267  PortPhysicalState 5 | 268-271 LinkDownDefaultState 2
85                       # bits 272-273  M_KeyProtectBits 10b | 274-276 reserved 000b | 277-279 LMC 101b
47                       # bits 280-283  LinkSpeedActive 4 | 284-287 LinkSpeedEnabled 7
53                       # bits 288-291  NeighborMTU 5 | 292-295 MasterSMSL 3
49                       # bits 296-299  VLCap 4 | 300-303 InitType 9
21                       # bits 304-311  VLHighLimit
08                       # bits 312-319  VLArbitrationHighCap
09                       # bits 320-327  VLArbitrationLowCap
a5                       # bits 328-331  InitTypeReply a | 332-335 MTUCap 5
f3                       # bits 336-338  VLStallCount 111b | 339-343 HOQLife 10011b
3a                       # bits 344-347  OperationalVLs 0011b | 348 PEInb 1 | 349 PEOutb 0 | 350 FilterRawInb 1 | 351 FilterRawOutb 0
31 32                    # bits 352-367  M_KeyViolations
33 34                    # bits 368-383  P_KeyViolations
35 36                    # bits 384-399  Q_KeyViolations
20                       # bits 400-407  GUIDCap
d2                       # bits 408 ClientReregister 1 | 409-410 MulticastPKeyTrapSuppressionEnabled 10b | 411-415 SubnetTimeOut 10010b
11                       # bits 416-418  reserved 000b | 419-423 RespTimeValue 10001b
c3                       # bits 424-427  LocalPhyErrors c | 428-431 OverrunErrors 3
41 42                    # bits 432-447  MaxCreditHint
3d                       # bit 448 reserved 0 | 449-450 LinkSpeedExtActive2 01b | 451-452 LinkSpeedExtSupported2 11b | 453-455 LinkSpeedExtEnabled2 101b
45 67 89                 # bits 456-479  LinkRoundTripLatency
00 54                    # bits 480-495  CapabilityMask2
13                       # bits 496-499  LinkSpeedExtActive 1 | 500-503 LinkSpeedExtSupported 3
1e                       # bits 504-506  reserved 000b | 507-511 LinkSpeedExtEnabled 11110b
`

// NodeInfo: byte layout of struct ib_node_info (IBA 14.2.5.3).
var madNodeInfoVec = NodeInfo{
	BaseVersion:     1,
	ClassVersion:    1,
	NodeType:        1,
	NumPorts:        2,
	SystemImageGUID: 0x0002c90300a1b2c3,
	NodeGUID:        0x0002c90300a1b2c0,
	PortGUID:        0x0002c90300a1b2c1,
	PartitionCap:    0x0080,
	DeviceID:        0x1017,
	Revision:        0x000000a0,
	LocalPortNum:    1,
	VendorID:        0x0002c9,
}

const madNodeInfoHex = `
01 01 01 02              # BaseVersion, ClassVersion, NodeType 1 (CA), NumPorts 2
00 02 c9 03 00 a1 b2 c3  # SystemImageGUID
00 02 c9 03 00 a1 b2 c0  # NodeGUID
00 02 c9 03 00 a1 b2 c1  # PortGUID
00 80 10 17              # PartitionCap 128, DeviceID 0x1017
00 00 00 a0              # Revision
01 00 02 c9              # LocalPortNum 1, VendorID 0x0002c9 (24 bits)
`

// ClassPortInfo: bit offsets of the IBA ClassPortInfo table (libibmad IB_CPI_*_F). The
// 27-bit CapabilityMask2 has its top bit set to catch a wrong shift.
var madClassPortInfoVec = ClassPortInfo{
	BaseVersion:     1,
	ClassVersion:    1,
	CapabilityMask:  PMCapAllPortSelect | PMCapExtendedWidth | PMCapExtendedWidthNoIETF | PMCapPortCountersXmitWait | PMCapRSFECCounters,
	CapabilityMask2: 0x4000003,
	RespTimeValue:   0x12,
	RedirectGID:     [16]byte{0xfe, 0x80, 15: 0x01},
	RedirectTC:      0xa0,
	RedirectSL:      0x5,
	RedirectFL:      0x12345,
	RedirectLID:     0x0102,
	RedirectPKey:    0xffff,
	RedirectQP:      0xabcdef,
	RedirectQKey:    0x80010000,
	TrapGID:         [16]byte{0xfe, 0x80, 15: 0x02},
	TrapTC:          0x0b,
	TrapSL:          0xc,
	TrapFL:          0xfedcb,
	TrapLID:         0x0304,
	TrapPKey:        0x7fff,
	TrapHL:          0x40,
	TrapQP:          0x123456,
	TrapQKey:        0x11223344,
}

const madClassPortInfoHex = `
01 01 57 00              # bits 0-7 BaseVersion, 8-15 ClassVersion, 16-31 CapabilityMask 0x5700 (bits 8,9,10,12,14)
80 00 00 72              # bits 32-58 CapabilityMask2 0x4000003 (<<5 = 0x80000060) | 59-63 RespTimeValue 0x12
fe 80 00 00 00 00 00 00  # bits 64-191 RedirectGID fe80::1
00 00 00 00 00 00 00 01
a0 51 23 45              # bits 192-199 RedirectTC a0 | 200-203 RedirectSL 5 | 204-223 RedirectFL 12345
01 02 ff ff              # bits 224-239 RedirectLID | 240-255 RedirectP_Key
00 ab cd ef              # bits 256-263 reserved | 264-287 RedirectQP
80 01 00 00              # bits 288-319 RedirectQ_Key
fe 80 00 00 00 00 00 00  # bits 320-447 TrapGID fe80::2
00 00 00 00 00 00 00 02
0b cf ed cb              # bits 448-455 TrapTC 0b | 456-459 TrapSL c | 460-479 TrapFL fedcb
03 04 7f ff              # bits 480-495 TrapLID | 496-511 TrapP_Key
40 12 34 56              # bits 512-519 TrapHL | 520-543 TrapQP
11 22 33 44              # bits 544-575 TrapQ_Key
`

// PortCounters: bit offsets of the IBA PortCounters table (libibmad IB_PC_*_F; struct
// ib_pma_portcounters).
var madPortCountersVec = PortCounters{
	PortSelect:                   0x01,
	CounterSelect:                0x1234,
	SymbolErrorCounter:           0x0102,
	LinkErrorRecoveryCounter:     0x03,
	LinkDownedCounter:            0x04,
	PortRcvErrors:                0x0506,
	PortRcvRemotePhysicalErrors:  0x0708,
	PortRcvSwitchRelayErrors:     0x090a,
	PortXmitDiscards:             0x0b0c,
	PortXmitConstraintErrors:     0x0d,
	PortRcvConstraintErrors:      0x0e,
	CounterSelect2:               0x0f,
	LocalLinkIntegrityErrors:     0xa,
	ExcessiveBufferOverrunErrors: 0x5,
	QP1Dropped:                   0x1011,
	VL15Dropped:                  0x1213,
	PortXmitData:                 0x14151617,
	PortRcvData:                  0x18191a1b,
	PortXmitPkts:                 0x1c1d1e1f,
	PortRcvPkts:                  0x20212223,
	PortXmitWait:                 0x24252627,
}

const madPortCountersHex = `
00 01 12 34              # bits 0-7 reserved | 8-15 PortSelect 1 | 16-31 CounterSelect
01 02 03 04              # bits 32-47 SymbolErrorCounter | 48-55 LinkErrorRecoveryCounter | 56-63 LinkDownedCounter
05 06 07 08              # bits 64-79 PortRcvErrors | 80-95 PortRcvRemotePhysicalErrors
09 0a 0b 0c              # bits 96-111 PortRcvSwitchRelayErrors | 112-127 PortXmitDiscards
0d 0e 0f a5              # bits 128-135 PortXmitConstraintErrors | 136-143 PortRcvConstraintErrors | 144-151 CounterSelect2 | 152-155 LocalLinkIntegrityErrors a | 156-159 ExcessiveBufferOverrunErrors 5
10 11 12 13              # bits 160-175 QP1Dropped | 176-191 VL15Dropped
14 15 16 17              # bits 192-223 PortXmitData
18 19 1a 1b              # bits 224-255 PortRcvData
1c 1d 1e 1f              # bits 256-287 PortXmitPkts
20 21 22 23              # bits 288-319 PortRcvPkts
24 25 26 27              # bits 320-351 PortXmitWait
`

// The PerfMgmt GetResp carrying madPortCountersVec: common header, 40
// reserved bytes, the 44-byte attribute, zero padding to 256 bytes.
const madPerfRespHeaderHex = `
01 04 01 81              # BaseVersion 1, PerfMgmt, ClassVersion 1, GetResp
00 00 00 00              # Status 0, ClassSpecific 0
00 00 00 2a 00 00 00 07  # TransactionID (upper half: the kernel's agent TID)
00 12 00 00              # PortCounters, Reserved
00 00 00 00              # AttributeModifier 0
`

var madPerfResp = PerfMAD{Header: MADHeader{
	BaseVersion:   1,
	MgmtClass:     ClassPerfMgmt,
	ClassVersion:  1,
	Method:        MethodGetResp,
	TransactionID: 0x0000002a00000007,
	AttributeID:   PMAttrPortCounters,
}}

// madPerfRespBytes is the whole 256-byte PerfMgmt GetResp.
func madPerfRespBytes(t testing.TB) []byte {
	b := madHex(t, madPerfRespHeaderHex)
	b = append(b, make([]byte, 40)...) // bytes 24-63 reserved
	b = append(b, madHex(t, madPortCountersHex)...)
	return madPad(b, MADSize)
}

// PortCountersExtended: byte layout of struct ib_pma_portcounters_ext and
// libibmad IB_PC_EXT_*_F. Counter k (0 = PortXmitData at byte 8, ...,
// 21 = QP1Dropped at byte 176) is 0x80+k in its top byte and k+1 in its
// bottom byte.
var madPortCountersExtVec = PortCountersExtended{
	PortSelect:                   0x02,
	CounterSelect:                0x00ff,
	CounterSelect2:               0x01020304,
	PortXmitData:                 0x8000000000000001,
	PortRcvData:                  0x8100000000000002,
	PortXmitPkts:                 0x8200000000000003,
	PortRcvPkts:                  0x8300000000000004,
	PortUnicastXmitPkts:          0x8400000000000005,
	PortUnicastRcvPkts:           0x8500000000000006,
	PortMulticastXmitPkts:        0x8600000000000007,
	PortMulticastRcvPkts:         0x8700000000000008,
	SymbolErrorCounter:           0x8800000000000009,
	LinkErrorRecoveryCounter:     0x890000000000000a,
	LinkDownedCounter:            0x8a0000000000000b,
	PortRcvErrors:                0x8b0000000000000c,
	PortRcvRemotePhysicalErrors:  0x8c0000000000000d,
	PortRcvSwitchRelayErrors:     0x8d0000000000000e,
	PortXmitDiscards:             0x8e0000000000000f,
	PortXmitConstraintErrors:     0x8f00000000000010,
	PortRcvConstraintErrors:      0x9000000000000011,
	LocalLinkIntegrityErrors:     0x9100000000000012,
	ExcessiveBufferOverrunErrors: 0x9200000000000013,
	VL15Dropped:                  0x9300000000000014,
	PortXmitWait:                 0x9400000000000015,
	QP1Dropped:                   0x9500000000000016,
}

const madPortCountersExtHex = `
00 02 00 ff              # reserved | PortSelect 2 | CounterSelect 0x00ff
01 02 03 04              # bits 32-63 CounterSelect2
80 00 00 00 00 00 00 01  # byte   8 PortXmitData
81 00 00 00 00 00 00 02  # byte  16 PortRcvData
82 00 00 00 00 00 00 03  # byte  24 PortXmitPkts
83 00 00 00 00 00 00 04  # byte  32 PortRcvPkts
84 00 00 00 00 00 00 05  # byte  40 PortUnicastXmitPkts
85 00 00 00 00 00 00 06  # byte  48 PortUnicastRcvPkts
86 00 00 00 00 00 00 07  # byte  56 PortMulticastXmitPkts
87 00 00 00 00 00 00 08  # byte  64 PortMulticastRcvPkts
88 00 00 00 00 00 00 09  # byte  72 SymbolErrorCounter
89 00 00 00 00 00 00 0a  # byte  80 LinkErrorRecoveryCounter
8a 00 00 00 00 00 00 0b  # byte  88 LinkDownedCounter
8b 00 00 00 00 00 00 0c  # byte  96 PortRcvErrors
8c 00 00 00 00 00 00 0d  # byte 104 PortRcvRemotePhysicalErrors
8d 00 00 00 00 00 00 0e  # byte 112 PortRcvSwitchRelayErrors
8e 00 00 00 00 00 00 0f  # byte 120 PortXmitDiscards
8f 00 00 00 00 00 00 10  # byte 128 PortXmitConstraintErrors
90 00 00 00 00 00 00 11  # byte 136 PortRcvConstraintErrors
91 00 00 00 00 00 00 12  # byte 144 LocalLinkIntegrityErrors
92 00 00 00 00 00 00 13  # byte 152 ExcessiveBufferOverrunErrors
93 00 00 00 00 00 00 14  # byte 160 VL15Dropped
94 00 00 00 00 00 00 15  # byte 168 PortXmitWait
95 00 00 00 00 00 00 16  # byte 176 QP1Dropped
`

// A directed-route SMP GetResp(NodeInfo) on its way back over a two-hop
// route (IBA 14.2.1.2; struct ib_smp): D set, status bits besides D zero,
// hop pointer and hop count 2, permissive DrSLID and DrDLID, the route's
// outbound ports 1 and 3 and inbound ports 2 and 1.
const madDRSMPHex = `
01 81 01 81              # BaseVersion 1, SubnMgmtDirectedRoute, ClassVersion 1, GetResp
80 00                    # D = 1 | Status 0 (15 bits)
02 02                    # HopPointer 2, HopCount 2
00 00 00 00 00 00 12 34  # TransactionID
00 11 00 00              # NodeInfo, Reserved
00 00 00 00              # AttributeModifier
00 00 00 00 00 00 00 00  # bytes 24-31 M_Key
ff ff ff ff              # bytes 32-33 DrSLID, 34-35 DrDLID: permissive
`

var madDRSMP = SMP{
	Header: MADHeader{
		BaseVersion:   1,
		MgmtClass:     ClassSubnMgmtDirectedRoute,
		ClassVersion:  1,
		Method:        MethodGetResp,
		TransactionID: 0x1234,
		AttributeID:   SMAttrNodeInfo,
	},
	Direction:   true,
	HopPointer:  2,
	HopCount:    2,
	DrSLID:      PermissiveLID,
	DrDLID:      PermissiveLID,
	InitialPath: [SMPMaxHops]byte{1: 1, 2: 3},
	ReturnPath:  [SMPMaxHops]byte{1: 2, 2: 1},
}

// madDRSMPBytes is the whole 256-byte directed-route SMP, with
// madNodeInfoVec in its data.
func madDRSMPBytes(t testing.TB) []byte {
	b := madPad(madHex(t, madDRSMPHex), 64)                 // bytes 36-63 reserved
	b = append(b, madPad(madHex(t, madNodeInfoHex), 64)...) // bytes 64-127 data
	b = append(b, madPad([]byte{0, 1, 3}, 64)...)           // bytes 128-191 InitialPath
	b = append(b, madPad([]byte{0, 2, 1}, 64)...)           // bytes 192-255 ReturnPath
	return b
}

// A LID-routed SMP Get(PortInfo) for port 1 with an M_Key (IBA 14.2.1.1):
// bytes 6-7 are ClassSpecific, not hop fields, and bytes 32-63 and 128-255
// are reserved.
const madLIDSMPHex = `
01 01 01 01              # BaseVersion 1, SubnMgmt, ClassVersion 1, Get
00 00 00 00              # Status, ClassSpecific
00 00 00 00 00 00 00 05  # TransactionID
00 15 00 00              # PortInfo, Reserved
00 00 00 01              # AttributeModifier: port 1
01 02 03 04 05 06 07 08  # bytes 24-31 M_Key
`

// A vendor range 2 MAD (class 0x32, the OpenIB ping class of
// infiniband-diags) carrying an active, first-and-last RMPP DATA segment
// (IBA 13.6.2.1; struct ib_vendor_mad): the OUI after a reserved byte at 36,
// data from byte 40.
const madVendorHex = `
01 32 01 01              # BaseVersion 1, class 0x32, ClassVersion 1, Get
00 00 00 00              # Status, ClassSpecific
00 00 00 00 ca fe 00 01  # TransactionID
00 00 00 00              # AttributeID 0, Reserved
00 00 00 00              # AttributeModifier
01 01 ff 00              # RMPPVersion 1, RMPPType 1 (DATA), RRespTime 11111b | RMPPFlags 111b, RMPPStatus 0
00 00 00 01              # Data1: SegmentNumber 1
00 00 00 d8              # Data2: PayloadLength 216
00 00 14 05              # reserved, OUI 0x001405 (OpenIB)
70 69 6e 67              # data "ping"
`

var madVendor = VendorMAD{
	Header: MADHeader{
		BaseVersion:   1,
		MgmtClass:     0x32,
		ClassVersion:  1,
		Method:        MethodGet,
		TransactionID: 0xcafe0001,
	},
	RMPP: RMPPHeader{
		Version:  RMPPVersion1,
		Type:     RMPPTypeData,
		RespTime: RMPPNoRespTime,
		Flags:    RMPPFlagActive | RMPPFlagFirst | RMPPFlagLast,
		Data1:    1,
		Data2:    216,
	},
	OUI:  OUIOpenIB,
	Data: [VendorDataSize]byte{'p', 'i', 'n', 'g'},
}
