package umad

// Subnet Administration (SA) queries: the SA class's MAD layout (IBA
// 15.2.1), its attributes (IBA 15.2.5), a client that sends a query to the
// SA and returns its answer's records, and the records saquery shows,
// decoded. This is what infiniband-diags' saquery and libibmad's sa_*
// functions do over libibumad (rdma-core, infiniband-diags/ibdiag_sa.c:
// sa_get_handle, sa_query, sa_get_query_rec; libibmad/sa.c).
//
// An SA GetTable answer larger than one MAD comes as RMPP segments (IBA
// 13.6). On a kernel port the SAClient's agent is registered with
// rmpp_version 1, as libibumad's umad_register(fd, IB_SA_CLASS, 2, 1,
// NULL) in sa_get_handle does: the kernel acknowledges and reassembles the
// segments (drivers/infiniband/core/mad_rmpp.c) and a read returns the
// whole message, which Port.Recv grows its packet for. On an ibsim port
// there is no RMPP: libumad2sim hands ibsim the first 256 bytes of what
// OpenSM writes, and its reader gets that one MAD at the length it was
// written, so the answer holds the records that fit the first segment —
// what infiniband-diags' saquery shows there too. RMPPReassembler
// reassembles segments for an agent registered with UserRMPP.

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/purerdma/rdma/internal/errs"
)

// SA attribute IDs (IBA 15.2.5; libibmad's IB_SA_ATTR_*).
const (
	SAAttrClassPortInfo    AttrID = 0x0001
	SAAttrNodeRecord       AttrID = 0x0011
	SAAttrPortInfoRecord   AttrID = 0x0012
	SAAttrSL2VLTableRecord AttrID = 0x0013
	SAAttrSwitchInfoRecord AttrID = 0x0014
	SAAttrLFTRecord        AttrID = 0x0015
	SAAttrRFTRecord        AttrID = 0x0016
	SAAttrMFTRecord        AttrID = 0x0017
	SAAttrSMInfoRecord     AttrID = 0x0018
	SAAttrLinkRecord       AttrID = 0x0020
	SAAttrGUIDInfoRecord   AttrID = 0x0030
	SAAttrServiceRecord    AttrID = 0x0031
	SAAttrPKeyTableRecord  AttrID = 0x0033
	SAAttrPathRecord       AttrID = 0x0035
	SAAttrVLArbTableRecord AttrID = 0x0036
	SAAttrMCMemberRecord   AttrID = 0x0038
	SAAttrInformInfoRecord AttrID = 0x00F3
)

const (
	// SAClassVersion is the SA class version the requests carry
	// (IBA 1.2 on).
	SAClassVersion = 2
	// SAHeaderSize is the size of an SA MAD's headers: the common
	// header, the RMPP header and the SA header (IB_SA_DATA_OFFS).
	SAHeaderSize = 56
	// SADataSize is the room for data in one SA MAD (IB_SA_DATA_SIZE).
	SADataSize = MADSize - SAHeaderSize

	saQPN            = 1
	saDefaultTimeout = time.Second
)

// SA-specific MAD status codes (IBA 15.2.1.1, the class-specific bits
// 8–14 of Status; libibmad's IB_SA_MAD_STATUS_*), as the SA code in
// Status>>8.
const (
	SAStatusNoResources       = 1
	SAStatusReqInvalid        = 2
	SAStatusNoRecords         = 3
	SAStatusTooManyRecords    = 4
	SAStatusInvalidGID        = 5
	SAStatusInsufficientComps = 6
	SAStatusDenied            = 7
)

// SAQuery is one SA request (libibmad's ib_rpc_t as sa_query fills it,
// infiniband-diags/ibdiag_sa.c): the method (MethodGet, MethodGetTable,
// …), the attribute and its modifier, the component mask that says which
// of Data's fields to match, the SM_Key, and the attribute (the template
// record), at most SADataSize bytes.
type SAQuery struct {
	Method   Method
	Attr     AttrID
	Modifier uint32
	CompMask uint64
	SMKey    uint64
	Data     []byte
}

// Append appends the 256-byte request MAD, with transaction ID tid, to b
// (libibmad's mad_build_pkt for the SA class, and the SM_Key sa_query
// sets). Data beyond SADataSize bytes is cut.
func (q *SAQuery) Append(b []byte, tid uint64) []byte {
	if q == nil {
		return b
	}
	b, t := grow(b, MADSize)
	clear(t)
	h := NewMADHeader(ClassSubnAdm, q.Method, q.Attr, q.Modifier, tid)
	h.ClassVersion = SAClassVersion
	h.put(t)
	be := binary.BigEndian
	be.PutUint64(t[36:44], q.SMKey)
	be.PutUint64(t[48:56], q.CompMask)
	copy(t[SAHeaderSize:], q.Data)
	return b
}

// SAResponse is a decoded SA answer: its MAD header, its RMPP header
// (zero outside RMPP), the SA header (SM_Key, AttributeOffset in 8-byte
// units, ComponentMask) and the data after it, to the message's end.
type SAResponse struct {
	Header     MADHeader
	RMPP       RMPPHeader
	SMKey      uint64
	AttrOffset uint16
	CompMask   uint64
	Data       []byte
}

var errSAShort = madError("an SA MAD needs 56 bytes", &ErrShortMAD)

// DecodeSAResponse decodes an SA MAD (or a reassembled RMPP message) of
// at least SAHeaderSize bytes; Data aliases b. It returns an error
// wrapping ErrShortMAD for a shorter b and ErrWrongClass when the class
// is not SubnAdm.
func DecodeSAResponse(b []byte) (*SAResponse, error) {
	if len(b) < SAHeaderSize {
		return nil, errSAShort
	}
	r := &SAResponse{}
	if err := r.Header.Decode(b); err != nil {
		return nil, err
	}
	if r.Header.MgmtClass != ClassSubnAdm {
		return nil, madError(fmt.Sprintf("class %#x is not SubnAdm", uint8(r.Header.MgmtClass)), &ErrWrongClass)
	}
	r.RMPP.get(b[MADHeaderSize:])
	be := binary.BigEndian
	r.SMKey = be.Uint64(b[36:44])
	r.AttrOffset = be.Uint16(b[44:46])
	r.CompMask = be.Uint64(b[48:56])
	r.Data = b[SAHeaderSize:]
	return r, nil
}

// Records returns the answer's records as infiniband-diags' sa_query
// counts them: none when Status is not 0; for a GetTableResp as many
// whole records of AttrOffset×8 bytes as Data holds (none with an offset
// of 0); otherwise the one record, Data. The records alias Data.
func (r *SAResponse) Records() [][]byte {
	if r == nil || r.Header.Status != 0 {
		return nil
	}
	if r.Header.Method != MethodGetTableResp {
		return [][]byte{r.Data}
	}
	size := int(r.AttrOffset) * 8
	if size == 0 {
		return nil
	}
	n := len(r.Data) / size
	recs := make([][]byte, n)
	for i := range recs {
		recs[i] = r.Data[i*size : (i+1)*size : (i+1)*size]
	}
	return recs
}

// SAClient sends SA queries from an agent of a port to the SA: libibmad's
// sa handle as infiniband-diags' sa_get_handle opens it (ibdiag_sa.c),
// the agent registered for the SA class, version 2, with kernel RMPP.
type SAClient struct {
	port  *Port
	agent AgentID
	// SMLID and SL address the SA (the port's SM LID and SM SL in
	// sysfs, as resolve_sm_portid reads them); QKey is the SA's Q_Key
	// (QP1QKey by default).
	SMLID uint16
	SL    uint8
	QKey  uint32
	// Timeout is how long a query waits for its answer (the send's
	// timeout and the receive's, as sa_query passes ibd_timeout to both);
	// 0 means one second (saquery's DEFAULT_SA_TIMEOUT_MS).
	Timeout time.Duration
	pkt     *Packet
	tid     uint32
}

// NewSAClient registers an SA agent on p (class SubnAdm, version 2,
// rmpp_version 1: libibumad's umad_register(fd, IB_SA_CLASS, 2, 1, NULL)
// as infiniband-diags' sa_get_handle does) for queries to the SA at LID
// smLID with service level sl. Close unregisters it; the port stays
// open.
func NewSAClient(p *Port, smLID uint16, sl uint8) (*SAClient, error) {
	if p == nil {
		return nil, errNil("NewSAClient")
	}
	id, err := p.RegisterAgent(Registration{Class: ClassSubnAdm, Version: SAClassVersion, RMPPVersion: 1})
	if err != nil {
		return nil, err
	}
	return &SAClient{port: p, agent: id, SMLID: smLID, SL: sl, QKey: QP1QKey, pkt: NewPacket()}, nil
}

// Close unregisters the client's agent (libibumad's umad_unregister in
// sa_free_handle).
func (c *SAClient) Close() error {
	if c == nil || c.port == nil {
		return nil
	}
	p := c.port
	c.port = nil
	return p.Unregister(c.agent)
}

// Query sends q to the SA and returns its answer, as infiniband-diags'
// sa_query does: one send with the client's timeout and no retries, then
// the answer read within the timeout. An answer with a MAD status other
// than 0 is returned with a nil error (look at Header.Status; Records is
// empty). Errors are *Error values: the send's (Op "send", libibumad's
// umad_send failing), the receive's (Op "receive", umad_recv failing;
// ErrTimeout when nothing came within the timeout), and, when the request
// came back unanswered with a status (the kernel's send timeout, ibsim's
// drop), Op "SA query" with ErrTimeout and that status's errno (sa_query's
// umad_status).
func (c *SAClient) Query(q SAQuery) (*SAResponse, error) {
	if c == nil || c.port == nil {
		return nil, errNil("SAClient.Query")
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = saDefaultTimeout
	}
	c.tid++
	tid := uint64(c.tid)
	var buf [MADSize]byte
	req := q.Append(buf[:0], tid)
	if err := c.pkt.SetMAD(req); err != nil {
		return nil, err
	}
	if err := c.pkt.SetAddr(c.SMLID, saQPN, c.SL, c.QKey); err != nil {
		return nil, err
	}
	if err := c.port.Send(c.agent, c.pkt, timeout, 0); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout + 100*time.Millisecond)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, errs.New("receive", c.port.name, ErrTimeout)
		}
		if _, err := c.port.Recv(c.pkt, left); err != nil {
			return nil, err
		}
		m := c.pkt.MAD()
		if len(m) < MADHeaderSize || uint32(binary.BigEndian.Uint64(m[8:16])) != uint32(tid) {
			continue // an answer to an earlier query
		}
		if st := c.pkt.Status(); st != 0 {
			return nil, errs.New("SA query", c.port.name, detail(ErrTimeout, "the request came back unanswered", st))
		}
		out := make([]byte, len(m))
		copy(out, m)
		return DecodeSAResponse(out)
	}
}

// GetTable is Query with MethodGetTable: the records matching the
// template data in the fields compMask selects (libibmad's
// sa_query/saquery's get_any_records). A MAD status other than 0 comes
// back as an *SAStatusError.
func (c *SAClient) GetTable(attr AttrID, compMask uint64, data []byte) ([][]byte, error) {
	r, err := c.Query(SAQuery{Method: MethodGetTable, Attr: attr, CompMask: compMask, Data: data})
	if err != nil {
		return nil, err
	}
	if r.Header.Status != 0 {
		return nil, &SAStatusError{Status: r.Header.Status}
	}
	return r.Records(), nil
}

// SAStatusError is an SA answer with a MAD status other than 0.
type SAStatusError struct{ Status MADStatus }

func (e *SAStatusError) Error() string {
	return fmt.Sprintf("SA answered with status %#04x (%s)", uint16(e.Status), SAStatusText(e.Status))
}

var saStatusTexts = []string{"SA_NO_ERROR", "SA_ERR_NO_RESOURCES", "SA_ERR_REQ_INVALID", "SA_ERR_NO_RECORDS",
	"SA_ERR_TOO_MANY_RECORDS", "SA_ERR_REQ_INVALID_GID", "SA_ERR_REQ_INSUFFICIENT_COMPONENTS", "SA_ERR_REQ_DENIED",
	"SA_ERR_STATUS_PRIO_SUGGESTED", "SA_ERR_UNKNOWN"}

// SAStatusText names the SA code of a MAD status (its bits 8–15) as
// infiniband-diags' ib_sa_err_str does: SA_NO_ERROR … SA_ERR_UNKNOWN.
func SAStatusText(s MADStatus) string {
	i := int(s >> 8)
	if i >= len(saStatusTexts) {
		i = len(saStatusTexts) - 1
	}
	return saStatusTexts[i]
}
