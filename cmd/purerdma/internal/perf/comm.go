package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/purerdma/rdma"
)

// dest is perftest's struct pingpong_dest: what each side tells the other
// of one QP.
type dest struct {
	lid      uint32
	outReads uint32
	qpn      uint32
	psn      uint32
	rkey     uint32
	vaddr    uint64
	gid      rdma.GID
	srqn     uint32
}

// The key messages' sizes (KEY_MSG_SIZE, KEY_MSG_SIZE_GID in
// perftest_communication.h), the NUL included.
const (
	keyMsgSize    = 59
	keyMsgSizeGID = 108
)

// wire is ethernet_write_keys' message: KEY_PRINT_FMT, or KEY_PRINT_FMT_GID
// when a GID is in use, with its NUL.
func (d *dest) wire(withGID bool) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%04x:%04x:%06x:%06x:%08x:%016x:", d.lid, d.outReads, d.qpn, d.psn, d.rkey, d.vaddr)
	if withGID {
		for _, g := range d.gid {
			fmt.Fprintf(&b, "%02x:", g)
		}
		fmt.Fprintf(&b, "%08x:", d.srqn)
	} else {
		fmt.Fprintf(&b, "%08x", d.srqn)
	}
	return append([]byte(b.String()), 0)
}

// parseDest is ethernet_read_keys: the fields are hexadecimal numbers
// separated by colons, as strtoul reads them.
func parseDest(b []byte, withGID bool) (dest, error) {
	var d dest
	s := string(b)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	f := strings.Split(s, ":")
	want := 7
	if withGID {
		want = 23
	}
	if len(f) < want {
		return d, perr("Couldn't parse line <%s>", s)
	}
	var v [23]uint64
	for i := 0; i < want; i++ {
		x, err := strconv.ParseUint(f[i], 16, 64)
		if err != nil {
			return d, perr("Couldn't parse line <%s>", s)
		}
		v[i] = x
	}
	d.lid, d.outReads, d.qpn, d.psn, d.rkey, d.vaddr = uint32(v[0]), uint32(v[1]), uint32(v[2]), uint32(v[3]), uint32(v[4]), v[5]
	if withGID {
		for i := range d.gid {
			d.gid[i] = byte(v[6+i])
		}
		d.srqn = uint32(v[22])
	} else {
		d.srqn = uint32(v[6])
	}
	return d, nil
}

// comm is perftest's struct perftest_comm over TCP: one connection on
// which every exchange is client first (ctx_xchg_data_ethernet).
type comm struct {
	conn    net.Conn // the TCP exchange, or
	cm      *cmLink  // the rdma_cm one (-R)
	client  bool
	withGID bool // the key messages carry a GID (gid_index != -1)
	gidIdx  int
}

// dial is ethernet_client_connect; unlike the C tool it retries a refused
// connection for up to 10 s (a server that does not listen yet).
func dial(ctx context.Context, host string, port int) (net.Conn, error) {
	var d net.Dialer
	for try := 0; ; try++ {
		conn, err := d.DialContext(ctx, "tcp4", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			return conn, nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || try == 100 || ctx.Err() != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// accept is ethernet_server_connect: one connection, then the listener
// is closed.
func accept(ctx context.Context, port int) (net.Conn, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp4", ":"+strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	conn, err := ln.Accept()
	ln.Close()
	return conn, err
}

// xchg exchanges two messages of the same size: the client writes first,
// the server reads first. Each message goes out in one write, since the C
// peer reads it with one read(2).
func (c *comm) xchg(my, rem []byte) error {
	if c.cm != nil {
		if c.client {
			if err := c.cm.write(my); err != nil {
				return err
			}
			return c.cm.read(rem)
		}
		if err := c.cm.read(rem); err != nil {
			return err
		}
		return c.cm.write(my)
	}
	if c.client {
		if _, err := c.conn.Write(my); err != nil {
			return err
		}
		_, err := io.ReadFull(c.conn, rem)
		return err
	}
	if _, err := io.ReadFull(c.conn, rem); err != nil {
		return err
	}
	_, err := c.conn.Write(my)
	return err
}

// handshake is ctx_hand_shake: one key message each way.
func (c *comm) handshake(my *dest, rem *dest) error {
	if c.cm != nil {
		buf := make([]byte, keyMsgSizeCM)
		if err := c.xchg(my.wireCM(c.gidIdx), buf); err != nil {
			return perr("Failed to exchange data between server and clients: %w", err)
		}
		d, err := parseDestCM(buf)
		if err != nil {
			return err
		}
		*rem = d
		return nil
	}
	n := keyMsgSize
	if c.withGID {
		n = keyMsgSizeGID
	}
	buf := make([]byte, n)
	if err := c.xchg(my.wire(c.withGID), buf); err != nil {
		return perr("Failed to exchange data between server and clients: %w", err)
	}
	d, err := parseDest(buf, c.withGID)
	if err != nil {
		return err
	}
	*rem = d
	return nil
}

// closeConn is ctx_close_connection: a last handshake, then "done" with
// its NUL, which nobody reads.
func (c *comm) closeConn(my, rem *dest) error {
	if err := c.handshake(my, rem); err != nil {
		return perr("Failed to close connection between server and client: %w", err)
	}
	if c.cm != nil {
		return nil
	}
	_, err := c.conn.Write([]byte("done\x00"))
	c.conn.Close()
	return err
}

// bwReport is perftest's struct bw_report_data, the part exchanged.
type bwReport struct {
	size    uint64
	iters   uint64
	bwPeak  float64
	bwAvg   float64
	msgRate float64
}

// xchgReports is xchg_bw_reports for a peer of version 5.33 or later:
// size and iters as 64-bit big-endian numbers, then peak, average and
// message rate as big-endian doubles, each in its own exchange.
func (c *comm) xchgReports(my bwReport) (bwReport, error) {
	var rem bwReport
	vals := []uint64{my.size, my.iters, math.Float64bits(my.bwPeak), math.Float64bits(my.bwAvg), math.Float64bits(my.msgRate)}
	var out [5]uint64
	for i, v := range vals {
		var a, b [8]byte
		binary.BigEndian.PutUint64(a[:], v)
		if err := c.xchg(a[:], b[:]); err != nil {
			return rem, perr("Failed to exchange data between server and clients: %w", err)
		}
		out[i] = binary.BigEndian.Uint64(b[:])
	}
	rem.size, rem.iters = out[0], out[1]
	rem.bwPeak, rem.bwAvg, rem.msgRate = math.Float64frombits(out[2]), math.Float64frombits(out[3]), math.Float64frombits(out[4])
	return rem, nil
}

// versions is exchange_versions, check_version_compatibility and
// check_sys_data: the 16-byte version strings, then the page size and
// cache line size as big-endian 32-bit numbers, of which each side keeps
// the larger.
func (c *comm) versions(p *params) error {
	var my, rem [16]byte
	copy(my[:], version)
	if err := c.xchg(my[:], rem[:]); err != nil {
		return perr("Failed to exchange data between server and clients: %w", err)
	}
	rv := string(rem[:])
	if i := strings.IndexByte(rv, 0); i >= 0 {
		rv = rv[:i]
	}
	p.remVersion = rv
	if atof(rv) < 5.70 {
		return errVersion
	}
	for _, v := range []*int{&p.cycleBuffer, &p.cacheLineSize} {
		var a, b [4]byte
		binary.BigEndian.PutUint32(a[:], uint32(*v))
		if err := c.xchg(a[:], b[:]); err != nil {
			return perr("Failed to exchange Page Size data between server and client: %w", err)
		}
		if r := int(int32(binary.BigEndian.Uint32(b[:]))); r > *v {
			*v = r
		}
	}
	return nil
}

//lint:ignore ST1005 perftest's own message, byte for byte
var errVersion = errors.New("Current implementation is not compatible with versions older than 5.70")

// mtu is check_mtu's exchange: the enum ibv_mtu as one ASCII digit and a
// NUL; each side runs with the smaller.
func (c *comm) mtu(p *params, local int) error {
	my := []byte(strconv.Itoa(local) + "\x00")
	if len(my) > 2 {
		my = my[:2]
	}
	rem := make([]byte, 2)
	if err := c.xchg(my, rem); err != nil {
		return perr("Failed to exchange data between server and clients: %w", err)
	}
	r := int(atof(strings.TrimRight(string(rem), "\x00")))
	p.currMTU = local
	if r >= 1 && r <= 5 && local > r {
		p.currMTU = r
	}
	return nil
}

// atof is C's atof for the numbers perftest sends: the longest prefix
// that is a decimal number, 0 when there is none.
func atof(s string) float64 {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	for ; i > 0; i-- {
		if v, err := strconv.ParseFloat(s[:i], 64); err == nil {
			return v
		}
	}
	return 0
}

// peerGone tells whether the peer has closed the TCP connection of the
// exchange, without reading what it may have sent: a peek that finds the
// end of the stream, or a reset. Over rdma_cm it cannot tell (false).
func (c *comm) peerGone() bool {
	tc, ok := c.conn.(*net.TCPConn)
	if !ok {
		return false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return true
	}
	gone := false
	var b [1]byte
	rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		gone = n == 0 && err == nil || err == syscall.ECONNRESET
		return true
	})
	return gone
}

// perr makes an error of one of perftest's messages, worded and
// capitalized as perftest prints it (a %w in format wraps, as with
// fmt.Errorf).
func perr(format string, a ...any) error {
	return fmt.Errorf(format, a...)
}
