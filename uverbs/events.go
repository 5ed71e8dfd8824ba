package uverbs

import (
	"context"
	"errors"
	"fmt"

	"github.com/purerdma/rdma/internal/errs"
)

// EventType is an asynchronous event's type (enum ibv_event_type, the
// kernel's enum ib_event_type).
type EventType uint32

// The async event types.
const (
	EventCQErr            EventType = 0
	EventQPFatal          EventType = 1
	EventQPReqErr         EventType = 2
	EventQPAccessErr      EventType = 3
	EventCommEst          EventType = 4
	EventSQDrained        EventType = 5
	EventPathMig          EventType = 6
	EventPathMigErr       EventType = 7
	EventDeviceFatal      EventType = 8
	EventPortActive       EventType = 9
	EventPortErr          EventType = 10
	EventLIDChange        EventType = 11
	EventPKeyChange       EventType = 12
	EventSMChange         EventType = 13
	EventSRQErr           EventType = 14
	EventSRQLimitReached  EventType = 15
	EventQPLastWQEReached EventType = 16
	EventClientReregister EventType = 17
	EventGIDChange        EventType = 18
	EventWQFatal          EventType = 19
)

var eventNames = [...]string{
	"CQ_ERR", "QP_FATAL", "QP_REQ_ERR", "QP_ACCESS_ERR", "COMM_EST", "SQ_DRAINED",
	"PATH_MIG", "PATH_MIG_ERR", "DEVICE_FATAL", "PORT_ACTIVE", "PORT_ERR", "LID_CHANGE",
	"PKEY_CHANGE", "SM_CHANGE", "SRQ_ERR", "SRQ_LIMIT_REACHED", "QP_LAST_WQE_REACHED",
	"CLIENT_REREGISTER", "GID_CHANGE", "WQ_FATAL",
}

// String returns the name libibverbs and the kernel use for the value.
func (t EventType) String() string {
	if int(t) < len(eventNames) {
		return eventNames[t]
	}
	return fmt.Sprintf("EventType(%d)", uint32(t))
}

// Element kinds of an event.
func (t EventType) isCQ() bool { return t == EventCQErr }
func (t EventType) isQP() bool {
	switch t {
	case EventQPFatal, EventQPReqErr, EventQPAccessErr, EventCommEst, EventSQDrained,
		EventPathMig, EventPathMigErr, EventQPLastWQEReached:
		return true
	}
	return false
}
func (t EventType) isSRQ() bool { return t == EventSRQErr || t == EventSRQLimitReached }
func (t EventType) isPort() bool {
	switch t {
	case EventPortActive, EventPortErr, EventLIDChange, EventPKeyChange, EventSMChange,
		EventClientReregister, EventGIDChange:
		return true
	}
	return false
}

// AsyncEvent is one asynchronous event (struct ibv_async_event), decoded
// from struct ib_uverbs_async_event_desc.
type AsyncEvent struct {
	Type EventType
	// Element is the raw element: the object's user handle for CQ, QP,
	// SRQ and WQ events, the port number for port events.
	Element uint64
	// CQ, QP, SRQ or Port is set according to Type (nil/0 when the
	// object is no longer known, for example destroyed meanwhile): SRQ
	// for EventSRQErr and EventSRQLimitReached.
	CQ   *CQ
	QP   *QP
	SRQ  *SRQ
	Port int
}

// String returns the name libibverbs and the kernel use for the value.
func (e AsyncEvent) String() string {
	switch {
	case e.CQ != nil:
		return fmt.Sprintf("%s on CQ %d", e.Type, e.CQ.handle)
	case e.QP != nil:
		return fmt.Sprintf("%s on QP %#x", e.Type, e.QP.num)
	case e.SRQ != nil:
		return fmt.Sprintf("%s on SRQ %d", e.Type, e.SRQ.num)
	case e.Type.isPort():
		return fmt.Sprintf("%s on port %d", e.Type, e.Port)
	}
	return fmt.Sprintf("%s (element %#x)", e.Type, e.Element)
}

// AsyncEvent waits for the next asynchronous event of the device, like
// ibv_get_async_event, and decodes it. It returns when an event arrives,
// ctx is done (ctx.Err()), or the context is closed.
//
// Errors: ctx.Err(); an *Error wrapping ErrNotSupported on kernels without
// the async event object, os.ErrClosed after Close, or the read errno.
func (c *Context) AsyncEvent(ctx context.Context) (AsyncEvent, error) {
	const op = "get async event"
	if c == nil {
		return AsyncEvent{}, errs.New(op, "", errNil)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if c.async == nil {
		return AsyncEvent{}, c.err(op, fmt.Errorf("the kernel has no async event file: %w", ErrNotSupported))
	}
	c.asyncMu.Lock()
	defer c.asyncMu.Unlock()
	var buf [asyncEventDescSize]byte
	n, err := c.async.ReadContext(ctx, buf[:])
	if err != nil {
		return AsyncEvent{}, c.readErr(ctx, op, err)
	}
	elem, typ, err := decodeAsyncEventDesc(buf[:n])
	if err != nil {
		return AsyncEvent{}, c.err(op, err)
	}
	e := AsyncEvent{Element: elem, Type: typ}
	switch {
	case e.Type.isCQ():
		e.CQ, _ = c.lookupUH(e.Element).(*CQ)
	case e.Type.isQP():
		e.QP, _ = c.lookupUH(e.Element).(*QP)
	case e.Type.isSRQ():
		e.SRQ, _ = c.lookupUH(e.Element).(*SRQ)
	case e.Type.isPort():
		e.Port = int(e.Element)
	}
	return e, nil
}

// readErr wraps a read error; the context's own errors are returned as
// they are.
func (c *Context) readErr(_ context.Context, op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return c.err(op, err)
}

// AsyncEventFD returns the descriptor number of the context's async event
// file, as ibv_context's async_fd (ibv_asyncwatch prints it), or -1 when
// the context has none (a kernel without the ASYNC_EVENT object, a fake
// device, or after Close).
func (c *Context) AsyncEventFD() int {
	if c == nil || c.async == nil {
		return -1
	}
	return c.async.Raw()
}
