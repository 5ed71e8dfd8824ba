package diags

// libibmad's RPC, as infiniband-diags' smpquery, sminfo and perfquery
// send their MADs (rdma-core 44, libibmad/rpc.c: mad_rpc and
// _do_madrpc): a request goes out up to MAD_DEF_RETRIES (3) times, each
// try with the kernel's retries at 0 and its own timeout, the same TID
// every time; a try whose send comes back with a status (the kernel's
// timeout, or ibsim's report that it dropped the request) is followed by
// the next. libibmad's warnings go to standard error as it prints them:
// IBWARN always, ERRS with -e or -d (madrpc_show_errors), DEBUG with -d
// (ibdebug).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/umad"
)

// libibmad's defaults (libibmad/mad.h): MAD_DEF_RETRIES, which counts
// the tries, and MAD_DEF_TIMEOUT_MS. --retries counts the tries after
// the first, so its default is madDefTries-1.
const (
	madDefTries   = 3
	madDefTimeout = time.Second
)

// madRecvGrace is how long past a try's timeout the try waits for the
// kernel's report of it (libibmad's umad_recv waits the timeout itself,
// racing the kernel's report). A try that gets neither is libibmad's
// "recv failed": over ibsim, ibsim stopped or busy (its timeouts wait
// while it is silent, as libumad2sim's do); on a kernel port, a report
// that never came.
const madRecvGrace = time.Second

// madLog prints libibmad's warnings: "ibwarn: [pid] function: message".
// A nil *madLog prints nothing.
type madLog struct {
	w     io.Writer
	errs  bool // ERRS: -e, or -d
	debug bool // DEBUG: -d
	// out is where infiniband-diags' IBDEBUG and IBVERBOSE print (the
	// tool's standard output; nil: nowhere), verbose is -v given.
	out     io.Writer
	verbose bool
}

// ibdebug is IBDEBUG (with -d): "ibdebug: [pid] fn: message" on out.
func (l *madLog) ibdebug(fn, format string, args ...any) {
	if l != nil && l.debug && l.out != nil {
		fmt.Fprintf(l.out, "ibdebug: [%d] %s: %s\n", os.Getpid(), fn, fmt.Sprintf(format, args...))
	}
}

// ibverbose is IBVERBOSE (with -v): "[pid] fn: message" on out.
func (l *madLog) ibverbose(fn, format string, args ...any) {
	if l != nil && l.verbose && l.out != nil {
		fmt.Fprintf(l.out, "[%d] %s: %s\n", os.Getpid(), fn, fmt.Sprintf(format, args...))
	}
}

// warn is IBWARN.
func (l *madLog) warn(fn, format string, args ...any) {
	if l != nil && l.w != nil {
		fmt.Fprintf(l.w, "ibwarn: [%d] %s: %s\n", os.Getpid(), fn, fmt.Sprintf(format, args...))
	}
}

// err is ERRS: IBWARN when errors are shown.
func (l *madLog) err(fn, format string, args ...any) {
	if l != nil && l.errs {
		l.warn(fn, format, args...)
	}
}

// dbg is DEBUG: IBWARN at debug level.
func (l *madLog) dbg(fn, format string, args ...any) {
	if l != nil && l.debug {
		l.warn(fn, format, args...)
	}
}

// madRPC sends requests from a port as libibmad's mad_rpc does.
type madRPC struct {
	port    *umad.Port
	pkt     *umad.Packet
	timeout time.Duration
	tries   int
	log     *madLog
	sim     bool // an ibsim port: a try can come back reported lost
	// fn is the libibmad function whose warning ends a failed request:
	// mad_rpc ("" too), or mad_rpc_rmpp for the SA and vendor calls.
	fn string
}

func newMadRPC(p *umad.Port, timeout time.Duration, tries int, log *madLog) *madRPC {
	return &madRPC{port: p, pkt: umad.NewPacket(), timeout: timeout, tries: max(tries, 1), log: log, sim: isSim(p)}
}

// errNoAnswer is a request no try of which was answered.
type errNoAnswer struct {
	dest    string // "Lid 4", "the PMA of Lid 4"
	tries   int    // tries made
	of      int    // tries allowed
	lost    int    // of which ibsim reported lost at once
	timeout time.Duration
	silent  bool // the last try got neither an answer nor a timeout
	sim     bool
	hint    string // what no answer to tries of the whole timeout means
}

func (e *errNoAnswer) Error() string {
	switch {
	case e.silent && e.sim:
		return fmt.Sprintf("no response from %s to try %d of %d, and no timeout either within %v: ibsim is stopped or busy (or gone)",
			e.dest, e.tries, e.of, e.timeout+madRecvGrace)
	case e.silent:
		return fmt.Sprintf("no response from %s to try %d, and the kernel did not report its timeout within %v",
			e.dest, e.tries, e.timeout+madRecvGrace)
	case e.lost == e.tries:
		return fmt.Sprintf("no response from %s after %d tries: ibsim reported each lost at once (it cannot route the address, or a port's error rate dropped the packet)",
			e.dest, e.tries)
	case e.lost > 0:
		return fmt.Sprintf("no response from %s after %d tries: %d reported lost by ibsim, %d timed out after %v",
			e.dest, e.tries, e.lost, e.tries-e.lost, e.timeout)
	}
	return fmt.Sprintf("no response from %s after %d tries %v apart%s", e.dest, e.tries, e.timeout, e.hint)
}

func (e *errNoAnswer) Unwrap() error { return umad.ErrTimeout }

// errMADStatus is an answer with a non-zero MAD status.
type errMADStatus struct {
	dest   string
	status umad.MADStatus
}

func (e *errMADStatus) Error() string {
	return fmt.Sprintf("%s answered with MAD status %v", e.dest, e.status)
}

// do is mad_rpc: it sends the request (a whole MAD, its TID set) from
// agent, addressed by addr, to dest (portid2str's text, for the
// warnings), and returns the answer's MAD. A MAD status other than 0
// fails (errMADStatus, the answer returned too); no answer fails
// errNoAnswer.
func (r *madRPC) do(agent umad.AgentID, req []byte, addr func(*umad.Packet) error, dest string) ([]byte, error) {
	tid := uint32(binary.BigEndian.Uint64(req[8:16]))
	ms := r.timeout.Milliseconds()
	// The tries' account, on the stack: the error is made from it only
	// when no try is answered (noAnswer).
	e := errNoAnswer{dest: dest, of: r.tries, timeout: r.timeout, sim: r.sim}
	failed := func(err error) ([]byte, error) {
		fn := r.fn
		if fn == "" {
			fn = "mad_rpc"
		}
		r.log.warn(fn, "_do_madrpc failed; dport (%s)", dest)
		return nil, err
	}
	for try := 0; try < r.tries; try++ {
		if try > 0 {
			r.log.err("_do_madrpc", "retry %d (timeout %d ms)", try, ms)
		}
		if err := r.pkt.SetMAD(req); err != nil {
			return nil, err
		}
		if err := addr(r.pkt); err != nil {
			return nil, err
		}
		if err := r.port.Send(agent, r.pkt, r.timeout, 0); err != nil {
			r.log.warn("_do_madrpc", "send failed; %s", cli.Strerror(cli.ErrnoOf(err)))
			return failed(err)
		}
		e.tries++
		sent := time.Now()
		for {
			left := r.timeout + madRecvGrace - time.Since(sent)
			var err error
			if left > 0 {
				_, err = r.port.Recv(r.pkt, left)
			}
			if left <= 0 || errors.Is(err, umad.ErrTimeout) {
				r.log.warn("_do_madrpc", "recv failed: %s", cli.Strerror(syscall.ETIMEDOUT))
				e.silent = true
				return failed(e.noAnswer())
			}
			if err != nil {
				r.log.warn("_do_madrpc", "recv failed: %s", cli.Strerror(cli.ErrnoOf(err)))
				return failed(err)
			}
			m := r.pkt.MAD()
			if len(m) < 24 || uint32(binary.BigEndian.Uint64(m[8:16])) != tid {
				continue // a late answer to an earlier request
			}
			if r.pkt.Status() != 0 {
				if r.reportedLost(time.Since(sent)) {
					e.lost++
				}
				break
			}
			// IB_DRSMP_STATUS_F: the status without a directed
			// route's D bit.
			if st := binary.BigEndian.Uint16(m[4:6]) & 0x7fff; st != 0 {
				fn := r.fn
				if fn == "" {
					fn = "mad_rpc"
				}
				r.log.err(fn, "MAD completed with error status 0x%x; dport (%s)", st, dest)
				return m, &errMADStatus{dest: dest, status: umad.MADStatus(st)}
			}
			return m, nil
		}
	}
	r.log.err("_do_madrpc", "timeout after %d retries, %d ms", r.tries, ms*int64(r.tries))
	return failed(e.noAnswer())
}

// reportedLost tells whether a try that came back with a status after
// waited was reported lost rather than timed out: on an ibsim port, one
// reported before its timeout (ibsim dropped it). A kernel port's status
// is always its MAD layer's timeout, and that can come before waited
// reaches the timeout: the kernel's timer starts when the send completes,
// which may be inside the write, and counts in jiffies, so it can fire up
// to a tick early (drivers/infiniband/core/mad.c, wait_for_response).
// Under TCG a try on rxe was once counted "reported lost by ibsim".
func (r *madRPC) reportedLost(waited time.Duration) bool {
	return r.sim && waited < r.timeout
}

// noAnswer is the error of e, the account of a request's tries.
func (e errNoAnswer) noAnswer() *errNoAnswer { return &e }

// ibexit is infiniband-diags' IBEXIT (ibdiag_common.c, ibexit): the
// failure on standard output, "[pid N] function: " with -d, and exit
// status 255.
func ibexit(stdout io.Writer, tool string, debug bool, fn, format string, args ...any) error {
	return ibexitMsg(stdout, tool, debug, fn, fmt.Sprintf(format, args...))
}

// ibexitMsg is ibexit with its message formatted: the plain path does
// not go through fmt (see perfqueryFail).
func ibexitMsg(stdout io.Writer, tool string, debug bool, fn, msg string) error {
	if debug {
		fmt.Fprintf(stdout, "%s: iberror: [pid %d] %s: failed: %s\n", tool, os.Getpid(), fn, msg)
	} else {
		io.WriteString(stdout, tool+": iberror: failed: "+msg+"\n")
	}
	return cli.ExitError{Code: 255}
}
