package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/uverbs"
)

// DefaultPath is the connection manager's character device.
const DefaultPath = "/dev/infiniband/rdma_cm"

// Options say where the connection manager and the verbs devices are. A
// nil *Options means the running system's.
type Options struct {
	// Path is the rdma_cm character device; "" means DefaultPath.
	Path string
	// Verbs are the options the IDs' devices are opened with.
	Verbs *uverbs.Options
}

func (o *Options) path() string {
	if o == nil || o.Path == "" {
		return DefaultPath
	}
	return o.Path
}

func (o *Options) verbs() *uverbs.Options {
	if o == nil {
		return nil
	}
	return o.Verbs
}

// EventChannel is an open rdma_cm device (struct rdma_event_channel): the
// IDs created on it report their events through it. Its descriptor is
// non-blocking and goes through the Go runtime poller.
type EventChannel struct {
	fd   *sys.FD
	opts Options

	mu     sync.Mutex // the maps and closed
	ids    map[uint32]*ID
	uids   map[uint64]*ID
	mcs    map[uint64]*mcast
	closed bool

	cmdMu sync.Mutex // cmd: one command at a time through the scratch
	cmd   cmdScratch

	rd   sync.Mutex // GetEvent: one reader at a time
	get  getScratch
	pool struct {
		sync.Mutex
		free *Event
	}
}

// cmdScratch holds a command (header and body) and the kernel's response,
// so that commands allocate nothing.
type cmdScratch struct {
	buf  [8 + 512]byte
	resp [1024]byte // the response, or a value the command points at
}

// getScratch is GET_EVENT's command and response.
type getScratch struct {
	cmd struct {
		hdr abi.RdmaUcmCmdHdr
		req abi.RdmaUcmGetEvent
	}
	resp abi.RdmaUcmEventResp
}

// NewEventChannel opens the connection manager, like
// rdma_create_event_channel, and checks its ABI version (4, from
// /sys/class/misc/rdma_cm/abi_version where that exists).
//
// Errors: an *Error wrapping os.ErrNotExist when rdma_ucm is not loaded,
// os.ErrPermission when the device may not be opened.
func NewEventChannel(opts *Options) (*EventChannel, error) {
	const op = "create event channel"
	if v, err := sys.ReadString("/sys/class/misc/rdma_cm/abi_version"); err == nil {
		var n int
		if _, err := fmt.Sscan(v, &n); err == nil && n != abi.RDMA_USER_CM_ABI_VERSION {
			return nil, errs.New(op, "", fmt.Errorf("rdma_cm ABI version %d, this package speaks %d: %w", n, abi.RDMA_USER_CM_ABI_VERSION, ErrNotSupported))
		}
	}
	path := opts.path()
	fd, err := sys.Open(path, syscall.O_RDWR|syscall.O_NONBLOCK)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("%w (load the rdma_ucm module: modprobe rdma_ucm)", err)
		}
		return nil, errs.New(op, "", err)
	}
	ch := &EventChannel{fd: fd, ids: map[uint32]*ID{}, uids: map[uint64]*ID{}, mcs: map[uint64]*mcast{}}
	if opts != nil {
		ch.opts = *opts
	}
	return ch, nil
}

// Fd returns the channel's descriptor number (rdma_event_channel's fd),
// readable (poll, epoll) when an event is waiting; -1 after Close.
func (ch *EventChannel) Fd() int {
	if ch == nil {
		return -1
	}
	return ch.fd.Raw()
}

// Close destroys the IDs still on the channel (their QPs, and the CQs
// CreateQP made for them) and closes the device, which wakes GetEvent
// with os.ErrClosed. It is safe to call more than once.
func (ch *EventChannel) Close() error {
	if ch == nil {
		return errs.New("close event channel", "", errNil)
	}
	if ch.fd == nil {
		return nil // a zero EventChannel: nothing was opened
	}
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		return nil
	}
	ids := make([]*ID, 0, len(ch.ids))
	for _, id := range ch.ids {
		ids = append(ids, id)
	}
	ch.mu.Unlock()
	for _, id := range ids {
		id.Close()
	}
	ch.mu.Lock()
	ch.closed = true
	ch.mu.Unlock()
	return ch.fd.Close()
}

// errClosed is the error of a call on a closed channel.
func (ch *EventChannel) errClosed(op string) error { return errs.New(op, "", os.ErrClosed) }

// exec runs one command: the header, then in, the command struct. When out
// is not empty the command's response field, at respOff in the struct,
// is pointed at the scratch's memory, which is copied into out after the
// call.
func exec[T any](ch *EventChannel, op, dev string, cmd uint32, in *T, respOff uintptr, out []byte) error {
	return execBuf(ch, op, dev, cmd, in, respOff, nil, out)
}

// execBuf is exec with memory the command points at, at ptrOff in the
// struct, that holds val for the kernel to read (SET_OPTION's value) or
// receives what it writes (out); a command has one or the other.
func execBuf[T any](ch *EventChannel, op, dev string, cmd uint32, in *T, ptrOff uintptr, val, out []byte) error {
	if ch == nil || ch.fd == nil {
		return errs.New(op, dev, errNil)
	}
	n := int(unsafe.Sizeof(*in))
	ch.cmdMu.Lock()
	defer ch.cmdMu.Unlock()
	s := &ch.cmd
	*(*abi.RdmaUcmCmdHdr)(unsafe.Pointer(&s.buf[0])) = abi.RdmaUcmCmdHdr{Cmd: cmd, In: uint16(n), Out: uint16(len(out))}
	copy(s.buf[8:], unsafe.Slice((*byte)(unsafe.Pointer(in)), n))
	if len(val) > 0 || len(out) > 0 {
		*(*uint64)(unsafe.Pointer(&s.buf[8+ptrOff])) = uint64(uintptr(unsafe.Pointer(&s.resp[0])))
		clear(s.resp[copy(s.resp[:], val):max(len(val), len(out))])
	}
	if _, err := ch.fd.Write(s.buf[:8+n]); err != nil {
		return errs.New(op, dev, err)
	}
	copy(out, s.resp[:len(out)])
	return nil
}

// setOption runs SET_OPTION with the option's value.
func (ch *EventChannel) setOption(op, dev string, handle, level, name uint32, val []byte) error {
	cmd := abi.RdmaUcmSetOption{Id: handle, Level: level, Optname: name, Optlen: uint32(len(val))}
	return execBuf(ch, op, dev, abi.RDMA_USER_CM_CMD_SET_OPTION, &cmd, unsafe.Offsetof(cmd.Optval), val, nil)
}

// GetEvent waits for the next event, like rdma_get_cm_event, and does
// what librdmacm does with it before returning it: a resolved address
// opens the ID's device (ADDR_ERROR with ENODEV when no verbs device has
// it); a connection request creates the new ID; a CONNECT_RESPONSE to an
// ID with a QP moves the QP to RTR and RTS and completes the connection,
// becoming ESTABLISHED (or CONNECT_ERROR); a REJECTED moves the QP to
// ERR; a MULTICAST_JOIN attaches the QP to the group. Events of IDs that
// were closed are dropped.
//
// It returns when an event arrives, ctx is done (ctx.Err()), or the
// channel is closed (os.ErrClosed). With a context that is never done
// (context.Background) it allocates nothing in steady state. Give each
// event back with Ack.
func (ch *EventChannel) GetEvent(ctx context.Context) (*Event, error) {
	const op = "get cm event"
	if ch == nil || ch.fd == nil {
		return nil, errs.New(op, "", errNil)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ch.rd.Lock()
	defer ch.rd.Unlock()
	g := &ch.get
	for {
		g.cmd.hdr = abi.RdmaUcmCmdHdr{Cmd: abi.RDMA_USER_CM_CMD_GET_EVENT, In: uint16(unsafe.Sizeof(g.cmd.req)), Out: uint16(unsafe.Sizeof(g.resp))}
		g.cmd.req.Response = uint64(uintptr(unsafe.Pointer(&g.resp)))
		_, err := ch.fd.Write(unsafe.Slice((*byte)(unsafe.Pointer(&g.cmd)), unsafe.Sizeof(g.cmd)))
		if err == syscall.EAGAIN {
			if err := ch.fd.WaitReadableContext(ctx); err != nil {
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return nil, err
				}
				return nil, errs.New(op, "", err)
			}
			continue
		}
		if err != nil {
			return nil, errs.New(op, "", err)
		}
		if ev := ch.process(&g.resp); ev != nil {
			return ev, nil
		}
	}
}

// getEvent takes an Event from the channel's pool.
func (ch *EventChannel) getEvent() *Event {
	ch.pool.Lock()
	e := ch.pool.free
	if e != nil {
		ch.pool.free = e.next
		e.next = nil
	}
	ch.pool.Unlock()
	if e == nil {
		e = new(Event)
	}
	e.ch = ch
	return e
}

func (ch *EventChannel) putEvent(e *Event) {
	ch.pool.Lock()
	e.next = ch.pool.free
	ch.pool.free = e
	ch.pool.Unlock()
}

// lookup finds the ID of an event: by the kernel's handle.
func (ch *EventChannel) lookup(handle uint32) *ID {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.ids[handle]
}

func (ch *EventChannel) lookupUID(uid uint64) *ID {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.uids[uid]
}

func (ch *EventChannel) lookupMC(uid uint64) *mcast {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.mcs[uid]
}

// add puts id on the channel; it fails once the channel is closed.
func (ch *EventChannel) add(id *ID) bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		return false
	}
	ch.ids[id.handle] = id
	ch.uids[id.uid] = id
	return true
}

func (ch *EventChannel) remove(id *ID) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.ids[id.handle] == id {
		delete(ch.ids, id.handle)
	}
	if ch.uids[id.uid] == id {
		delete(ch.uids, id.uid)
	}
	for uid, mc := range ch.mcs {
		if mc.id == id {
			delete(ch.mcs, uid)
		}
	}
}

// process turns the kernel's event into an Event, as rdma_get_cm_event's
// switch, or returns nil for an event to drop.
func (ch *EventChannel) process(r *abi.RdmaUcmEventResp) *Event {
	typ := EventType(r.Event)
	conn := (*abi.RdmaUcmConnParam)(unsafe.Pointer(&r.Param))
	switch typ {
	case EventConnectRequest:
		listen := ch.lookupUID(r.Uid)
		if listen == nil {
			return nil // the listener was closed; the kernel destroyed the request with it
		}
		ev := ch.getEvent()
		ev.Type, ev.Status, ev.ListenID, ev.ECE = typ, int32(r.Status), listen, ECE{r.Ece.VendorId, r.Ece.AttrMod}
		if listen.qpType == uverbs.QPTypeUD {
			ev.copyUD(&r.Param)
		} else {
			ev.copyConn(conn)
		}
		id, err := listen.newRequestID(r.Id, ev)
		if err != nil {
			ev.Ack()
			return nil
		}
		ev.ID = id
		return ev
	case EventMulticastJoin, EventMulticastError:
		mc := ch.lookupMC(r.Uid)
		if mc == nil {
			return nil
		}
		ev := ch.getEvent()
		ev.Type, ev.Status, ev.ID, ev.Group = typ, int32(r.Status), mc.id, mc.addr
		if typ == EventMulticastJoin {
			ev.copyUD(&r.Param)
			if err := mc.id.joined(mc, ev); err != nil {
				ev.Type, ev.Status = EventMulticastError, -int32(errs.Errno(err))
			}
		}
		return ev
	}
	id := ch.lookup(r.Id)
	if id == nil {
		return nil
	}
	ev := ch.getEvent()
	ev.Type, ev.Status, ev.ID, ev.ECE = typ, int32(r.Status), id, ECE{r.Ece.VendorId, r.Ece.AttrMod}
	switch typ {
	case EventAddrResolved:
		if err := id.addrResolved(); err != nil {
			ev.Type, ev.Status = EventAddrError, -int32(errnoOr(err, syscall.ENODEV))
		}
	case EventConnectResponse:
		ev.copyConn(conn)
		if err := id.connectResponse(); err != nil {
			ev.Type, ev.Status = EventConnectError, -int32(errnoOr(err, syscall.EINVAL))
		} else if id.hasQP() {
			ev.Type = EventEstablished
		}
	case EventEstablished:
		if id.qpType == uverbs.QPTypeUD {
			ev.copyUD(&r.Param)
		} else {
			ev.copyConn(conn)
		}
	case EventDeviceRemoval:
		id.deviceRemoved()
	case EventRejected, EventDisconnected:
		if id.connectFailed() {
			ev.Ack()
			return nil
		}
		ev.copyConn(conn)
		if typ == EventRejected {
			id.qpToErr()
		}
	default:
		if id.qpType == uverbs.QPTypeUD {
			ev.copyUD(&r.Param)
		} else {
			ev.copyConn(conn)
		}
	}
	return ev
}

// errnoOr returns err's errno, or def when it has none.
func errnoOr(err error, def syscall.Errno) syscall.Errno {
	if e := errs.Errno(err); e != 0 {
		return e
	}
	return def
}
