package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/rdmacm"
	"github.com/purerdma/rdma/uverbs"
)

// cmLink is perftest's exchange channel in its rdma_cm modes (-R): an RC QP
// connected by the connection manager on the test's port
// (rdma_client_connect, rdma_server_connect), on which each message of the
// exchange is one SEND of exactly its size into a posted receive
// (rdma_write_data, rdma_read_data), client first.
type cmLink struct {
	ctx    context.Context
	id     *rdmacm.ID
	mr     *uverbs.MR
	qp     *uverbs.QP
	recv   []uverbs.RecvWR
	send   []uverbs.SendWR
	client bool
	yield  bool
}

// cmWRID is the comm QP's work request ID (perftest's 5).
const cmWRID = 5

// keyMsgSizeCM is sizeof(struct pingpong_dest): the key message in the
// rdma_cm modes.
const keyMsgSizeCM = 56

func resolveIPv4(ctx context.Context, host string, port int) (netip.AddrPort, error) {
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("%s for %s:%d", "Name or service not known", host, port)
	}
	return netip.AddrPortFrom(ips[0].Unmap(), uint16(port)), nil
}

func (l *cmLink) setup() error {
	// One page: messages are sent from its first half, received into its
	// second (at most 56 bytes each).
	mr, err := l.id.PD().AllocMR(4096, uverbs.AccessLocalWrite)
	if err != nil {
		return err
	}
	l.mr = mr
	rs, _ := mr.SGE(2048, keyMsgSizeCM)
	l.recv = []uverbs.RecvWR{{ID: cmWRID, SGL: []uverbs.SGE{rs}}}
	ss, _ := mr.SGE(0, keyMsgSizeCM)
	l.send = []uverbs.SendWR{{ID: cmWRID, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{ss}}}
	_, err = l.qp.PostRecv(l.recv)
	return err
}

var commQP = uverbs.QPInitAttr{Type: uverbs.QPTypeRC,
	Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}}

func commParam() *rdmacm.ConnParam {
	return &rdmacm.ConnParam{RetryCount: 7, RNRRetryCount: 7}
}

// dialCM is rdma_client_connect.
func dialCM(ctx context.Context, host string, port int) (*cmLink, error) {
	dst, err := resolveIPv4(ctx, host, port)
	if err != nil {
		return nil, err
	}
	var id *rdmacm.ID
	for try := 0; ; try++ {
		qa := commQP
		id, err = rdmacm.CreateEP(ctx, rdmacm.EPAttr{Dst: dst, QP: &qa})
		if err == nil {
			l := &cmLink{ctx: ctx, id: id, qp: id.QP(), client: true}
			if err = l.setup(); err == nil {
				if err = id.Connect(commParam()); err == nil {
					l.yield = soft(id.Verbs())
					return l, nil
				}
			}
			l.close()
		}
		// A server that does not listen yet rejects; try again for 10 s.
		if try == 100 || ctx.Err() != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// acceptCM is rdma_server_connect: listen on the port, take one
// connection, and stop listening.
func acceptCM(ctx context.Context, port int) (*cmLink, error) {
	ln, err := rdmacm.CreateEP(ctx, rdmacm.EPAttr{Passive: true, Src: netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(port))})
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	if err := ln.Listen(1); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	id, err := ln.GetRequest(ctx)
	if err != nil {
		return nil, err
	}
	l := &cmLink{ctx: ctx, id: id}
	if l.qp, err = id.CreateQP(nil, commQP); err == nil {
		if err = l.setup(); err == nil {
			err = id.Accept(commParam())
		}
	}
	if err != nil {
		l.close()
		return nil, err
	}
	l.yield = soft(id.Verbs())
	return l, nil
}

func soft(c *uverbs.Context) bool {
	return c != nil && (c.DriverID() == rdma.DriverRXE || c.DriverID() == rdma.DriverSIW)
}

// poll waits for one completion on cq.
func (l *cmLink) poll(cq *uverbs.CQ) error {
	var wc [1]uverbs.WC
	for spins := 0; ; spins++ {
		n, err := cq.Poll(wc[:])
		if err != nil {
			return err
		}
		if n == 1 {
			if wc[0].Status != uverbs.WCSuccess {
				return perr("Completion with error on the rdma_cm exchange QP: %w", wc[0].Status)
			}
			return nil
		}
		if spins&0xff == 0xff {
			if err := l.ctx.Err(); err != nil {
				return err
			}
			if l.yield {
				sys.Yield()
			}
		}
	}
}

func (l *cmLink) write(b []byte) error {
	copy(l.mr.Buf(), b)
	l.send[0].SGL[0].Length = uint32(len(b))
	if _, err := l.qp.PostSend(l.send); err != nil {
		return err
	}
	return l.poll(l.qp.SendCQ())
}

func (l *cmLink) read(b []byte) error {
	if err := l.poll(l.qp.RecvCQ()); err != nil {
		return err
	}
	copy(b, l.mr.Buf()[2048:])
	_, err := l.qp.PostRecv(l.recv)
	return err
}

func (l *cmLink) close() {
	if l.id == nil {
		return
	}
	l.id.Close()
	if l.mr != nil {
		l.mr.Close()
	}
	l.id = nil
}

// wireCM is struct pingpong_dest as rdma_write_keys sends it: its fields
// big-endian (the HAVE_ENDIAN build), the padding after rkey zero.
func (d *dest) wireCM(gidIndex int) []byte {
	b := make([]byte, keyMsgSizeCM)
	binary.BigEndian.PutUint32(b[0:], d.lid)
	binary.BigEndian.PutUint32(b[4:], d.outReads)
	binary.BigEndian.PutUint32(b[8:], d.qpn)
	binary.BigEndian.PutUint32(b[12:], d.psn)
	binary.BigEndian.PutUint32(b[16:], d.rkey)
	binary.BigEndian.PutUint64(b[24:], d.vaddr)
	copy(b[32:48], d.gid[:])
	binary.BigEndian.PutUint32(b[48:], d.srqn)
	binary.BigEndian.PutUint32(b[52:], uint32(int32(gidIndex)))
	return b
}

func parseDestCM(b []byte) (dest, error) {
	var d dest
	if len(b) < keyMsgSizeCM {
		return d, errors.New("short key message")
	}
	d.lid = binary.BigEndian.Uint32(b[0:])
	d.outReads = binary.BigEndian.Uint32(b[4:])
	d.qpn = binary.BigEndian.Uint32(b[8:])
	d.psn = binary.BigEndian.Uint32(b[12:])
	d.rkey = binary.BigEndian.Uint32(b[16:])
	d.vaddr = binary.BigEndian.Uint64(b[24:])
	copy(d.gid[:], b[32:48])
	return d, nil
}

// cmTest is create_rdma_cm_connection's part for the test's own QPs: the
// client connects one ID per QP to the server's port, the server accepts
// them; each side makes its resources on the device the connection
// manager chose, with setup, when the first ID has one.
type cmTest struct {
	ids []*rdmacm.ID
	ln  *rdmacm.ID
}

func (t *test) cmParam() *rdmacm.ConnParam {
	cp := &rdmacm.ConnParam{RetryCount: 7, RNRRetryCount: 7}
	if t.p.verb == verbRead || t.p.verb == verbAtomic {
		cp.ResponderResources, cp.InitiatorDepth = uint8(t.p.outReads), uint8(t.p.outReads)
	}
	return cp
}

// cmListen is the server's listening ID for the test's QPs. perftest's
// server makes it after the exchange's first sync, when its client may
// already be connecting; the client retries a rejected connection, but
// not for long. Listening before the sync leaves no such window.
func (t *test) cmListen(ctx context.Context) error {
	ln, err := rdmacm.CreateEP(ctx, rdmacm.EPAttr{Passive: true, Src: netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(t.p.port))})
	if err != nil {
		return err
	}
	if err := ln.Listen(t.p.numQPs); err != nil {
		ln.Close()
		return err
	}
	t.cmLn = ln
	return nil
}

func (t *test) cmConnect(ctx context.Context, setup func(*uverbs.Context) error) (*cmTest, error) {
	p := t.p
	ct := &cmTest{}
	if p.server != "" {
		dst, err := resolveIPv4(ctx, p.server, p.port)
		if err != nil {
			return nil, err
		}
		for i := 0; i < p.numQPs; i++ {
			var err error
			for try := 0; ; try++ {
				var id *rdmacm.ID
				if id, err = rdmacm.CreateEP(ctx, rdmacm.EPAttr{Dst: dst}); err == nil {
					if i == 0 && t.pd == nil {
						err = setup(id.Verbs())
					}
					if err == nil {
						if _, err = id.CreateQP(t.pd, t.qpAttr()); err == nil {
							if err = id.Connect(t.cmParam()); err == nil {
								ct.ids = append(ct.ids, id)
								t.qps = append(t.qps, id.QP())
								break
							}
							id.DestroyQP()
						}
					}
					id.Close()
				}
				if try == 10 || ctx.Err() != nil {
					return ct, perr("RDMA CM event error: %w", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		return ct, nil
	}
	ln := t.cmLn
	ct.ln = ln
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for i := 0; i < p.numQPs; i++ {
		id, err := ln.GetRequest(ctx)
		if err != nil {
			return ct, err
		}
		ct.ids = append(ct.ids, id)
		if t.pd == nil {
			if err := setup(id.Verbs()); err != nil {
				return ct, err
			}
		}
		qp, err := id.CreateQP(t.pd, t.qpAttr())
		if err != nil {
			return ct, err
		}
		if err := id.Accept(t.cmParam()); err != nil {
			return ct, err
		}
		if p.conn == connRC {
			qp.Modify(&uverbs.QPAttr{MinRNRTimer: minRNRTimer}, uverbs.QPAttrMinRNRTimer)
		}
		t.qps = append(t.qps, qp)
	}
	ln.Close()
	ct.ln = nil
	return ct, nil
}

// disconnect is the teardown's first half: every ID disconnected (a
// synchronous ID waits for DISCONNECTED) and its QP destroyed.
func (ct *cmTest) disconnect() {
	if ct == nil {
		return
	}
	for _, id := range ct.ids {
		id.Disconnect()
	}
	for _, id := range ct.ids {
		id.DestroyQP()
	}
}

// closeIDs closes the IDs, after the resources made on their device.
func (ct *cmTest) closeIDs() {
	if ct == nil {
		return
	}
	for _, id := range ct.ids {
		id.Close()
	}
	if ct.ln != nil {
		ct.ln.Close()
	}
}
