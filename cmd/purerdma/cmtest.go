package main

// What ucmatose and udaddy share, as rdma-core's cmatose.c and udaddy.c
// share their options, their harness and librdmacm/examples/common.c.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/rdmacm"
	"github.com/purerdma/rdma/uverbs"
)

// cmOpts are the options ucmatose and udaddy share.
type cmOpts struct {
	dst, src   string
	haveDst    bool
	ps         rdmacm.PortSpace
	conns      int
	count      int
	size       int
	port       string
	setTOS     bool
	tos        uint8
	migrate    bool
	setTimeout bool
	ackTimeout uint8
	timeout    time.Duration
}

// cmOptions are the getopt options both tools take; extra adds the
// tool's own.
func cmOptions(o *cmOpts, extra ...getoptOption) []getoptOption {
	opts := []getoptOption{
		{short: 's', arg: true, set: func(v string) error { o.dst, o.haveDst = v, true; return nil }},
		{short: 'b', arg: true, set: func(v string) error { o.src = v; return nil }},
		{short: 'c', arg: true, set: func(v string) error { o.conns = int(int32(atoi(v))); return nil }},
		{short: 'C', arg: true, set: func(v string) error { o.count = int(int32(atoi(v))); return nil }},
		{short: 'S', arg: true, set: func(v string) error { o.size = int(int32(atoi(v))); return nil }},
		{short: 't', arg: true, set: func(v string) error { o.setTOS, o.tos = true, uint8(cStrtoul(v)); return nil }},
		{long: "timeout", arg: true, set: func(v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return getoptError("bad --timeout")
			}
			o.timeout = d
			return nil
		}},
	}
	return append(opts, extra...)
}

// cStrtoul is strtoul(s, NULL, 0): as strtol, a negative number wrapping.
func cStrtoul(s string) uint64 { return uint64(cStrtol(s)) }

// cmAddrFormat is -f: ip and name are what this tool resolves; gid (AF_IB
// addresses) it does not.
func cmAddrFormat(v string, stderr io.Writer) error {
	l := strings.ToLower(v)
	switch {
	case strings.HasPrefix(l, "ip"), strings.HasPrefix(l, "name"):
		return nil
	case strings.HasPrefix(l, "gid"):
		fmt.Fprintln(stderr, "AF_IB (gid) addresses are not supported")
		return getoptError("gid")
	}
	fmt.Fprintln(stderr, "Warning: unknown address format")
	return nil
}

// cmExit turns a "return status" into the tool's exit: the C tools return
// it from main, so the status is its low byte.
func cmExit(ret int) error {
	if ret == 0 {
		return nil
	}
	if ret&0xff == 0 {
		return exitError{1}
	}
	return exitError{ret & 0xff}
}

// cmRet is what a failed librdmacm or verbs call leaves in ret: -1 (with
// errno set, which perror prints).
const cmRet = -1

// cmPerror prints what perror(msg) does: msg, ": ", and the errno's text.
func cmPerror(w io.Writer, msg string, err error) {
	if n := errs.Errno(err); n != 0 {
		fmt.Fprintf(w, "%s: %s\n", msg, cmStrerror(n))
		return
	}
	fmt.Fprintf(w, "%s: %v\n", msg, err)
}

// cmStrerror is strerror: glibc's text starts with a capital letter.
func cmStrerror(n syscall.Errno) string {
	s := n.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// gaiError is a resolution error worded as glibc's gai_strerror words it,
// which the C tools print.
type gaiError string

func (e gaiError) Error() string { return string(e) }

// cmResolve is get_rdma_addr for an IP address or host name and a port
// number or service name. host "" is the wildcard address (a server with
// no -b).

func cmResolve(ctx context.Context, host, port string) (netip.AddrPort, error) {
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		n, lerr := net.DefaultResolver.LookupPort(ctx, "tcp", port)
		if lerr != nil {
			return netip.AddrPort{}, gaiError("Servname not supported for ai_socktype")
		}
		p = uint64(n)
	}
	if host == "" {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(p)), nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(a.Unmap(), uint16(p)), nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return netip.AddrPort{}, gaiError("Name or service not known")
	}
	a := addrs[0]
	for _, x := range addrs {
		if x.Unmap().Is4() {
			a = x
			break
		}
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(p)), nil
}

// cmAddrs resolves the tool's addresses, printing rdma_getaddrinfo's
// error: src (for a client, -b with port 0) and dst (the server's, or
// the address a server binds).
func cmAddrs(ctx context.Context, o *cmOpts, stdout io.Writer) (src, dst netip.AddrPort, ret int) {
	var err error
	if !o.haveDst {
		if dst, err = cmResolve(ctx, o.src, o.port); err != nil {
			fmt.Fprintf(stdout, "rdma_getaddrinfo error: %v\n", err)
			return src, dst, -2 // EAI_NONAME
		}
		return src, dst, 0
	}
	if o.src != "" {
		if src, err = cmResolve(ctx, o.src, "0"); err != nil {
			fmt.Fprintf(stdout, "rdma_getaddrinfo error: %v\n", err)
			return src, dst, -2
		}
	}
	if dst, err = cmResolve(ctx, o.dst, o.port); err != nil {
		fmt.Fprintf(stdout, "rdma_getaddrinfo error: %v\n", err)
		return src, dst, -2
	}
	return src, dst, 0
}

// cmPoll polls cq until it has given want completions, as the tools'
// poll_cqs, calling each for every completion (nil: none). Unlike the C
// tools, a completion with an error status is an error. Between empty
// polls it yields the CPU on rxe and siw (see rc_pingpong).
func cmPoll(ctx context.Context, cq *uverbs.CQ, yield bool, want int, each func(*uverbs.WC) error) error {
	var wc [8]uverbs.WC
	spins := 0
	for done := 0; done < want; {
		n, err := cq.Poll(wc[:])
		if err != nil {
			return err
		}
		if n == 0 {
			if spins++; spins&0xfff == 0 && ctx.Err() != nil {
				return fmt.Errorf("after %d of %d completions: %w", done, want, ctx.Err())
			}
			if yield {
				sys.Yield()
			}
			continue
		}
		for i := range wc[:n] {
			if wc[i].Status != uverbs.WCSuccess {
				return fmt.Errorf("completion %d: status %s", done+i, wc[i].Status)
			}
			if each != nil {
				if err := each(&wc[i]); err != nil {
					return err
				}
			}
		}
		done += n
	}
	return nil
}

// softDevice reports whether c's device is software (rxe, siw), whose
// completions need a CPU: polls yield between empty tries.
func softDevice(c *uverbs.Context) bool {
	return c != nil && (c.DriverID() == rdma.DriverRXE || c.DriverID() == rdma.DriverSIW)
}

// cmChannelError is create_event_channel's message.
func cmChannelError(stderr io.Writer, err error) {
	if errs.Errno(err) == syscall.ENODEV {
		fmt.Fprintln(stderr, "No RDMA devices were detected")
		return
	}
	cmPerror(stderr, "failed to create RDMA CM event channel", err)
}
