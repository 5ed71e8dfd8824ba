package rdmacm

import (
	"context"
	"fmt"
	"net/netip"
	"syscall"
	"time"

	"github.com/purerdma/rdma/internal/errs"
	"github.com/purerdma/rdma/uverbs"
)

// EPAttr says what CreateEP makes: struct rdma_addrinfo's addresses,
// port space and passive flag, and rdma_create_ep's PD and QP attributes.
type EPAttr struct {
	// PortSpace is the ID's port space; zero means PortSpaceTCP.
	PortSpace PortSpace
	// Passive makes a listening endpoint bound to Src (RAI_PASSIVE);
	// otherwise the endpoint resolves Dst, from Src when it is valid.
	Passive  bool
	Src, Dst netip.AddrPort
	// QP, when not nil, are the attributes of the endpoint's QP (for a
	// passive endpoint, of the QP GetRequest gives each new connection);
	// PD is the protection domain for it, nil for the device's.
	QP *uverbs.QPInitAttr
	PD *uverbs.PD
	// Timeout bounds each resolution; zero means 2 s, as rdma_create_ep.
	Timeout time.Duration
	// Options are the event channel's (nil: the running system's).
	Options *Options
}

// CreateEP creates a synchronous endpoint, like rdma_create_ep: an ID
// with an event channel of its own, on which Connect, Accept and
// Disconnect wait for their outcome (ESTABLISHED, DISCONNECTED) and
// return it as an error (a REJECTED one matches ECONNREFUSED and is a
// *RejectError). An active endpoint comes back with its address and route
// resolved and, with attr.QP, its QP created: Connect it. A passive one
// comes back bound: Listen, then GetRequest for each connection. ctx
// bounds the resolutions. Close the endpoint with Close, which also wakes
// a wait in another goroutine.
//
// Errors: those of the steps, each naming its step (ADDR_ERROR's errno
// for an address that does not resolve, for instance).
func CreateEP(ctx context.Context, attr EPAttr) (*ID, error) {
	const op = "create ep"
	if ctx == nil {
		ctx = context.Background()
	}
	ps := attr.PortSpace
	if ps == 0 {
		ps = PortSpaceTCP
	}
	ch, err := NewEventChannel(attr.Options)
	if err != nil {
		return nil, err
	}
	id, err := ch.CreateID(ps)
	if err != nil {
		ch.Close()
		return nil, err
	}
	id.sync = true
	fail := func(err error) (*ID, error) {
		id.Close()
		return nil, errs.New(op, "", err)
	}
	if attr.Passive {
		if err := id.Bind(attr.Src); err != nil {
			return fail(err)
		}
		if attr.QP != nil {
			qa := *attr.QP
			id.reqQP, id.reqPD = &qa, attr.PD
		}
		return id, nil
	}
	timeout := attr.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	if err := id.ResolveAddr(attr.Src, attr.Dst, timeout); err != nil {
		return fail(err)
	}
	if err := id.await(ctx, "resolve addr", EventAddrResolved); err != nil {
		return fail(err)
	}
	if err := id.ResolveRoute(timeout); err != nil {
		return fail(err)
	}
	if err := id.await(ctx, "resolve route", EventRouteResolved); err != nil {
		return fail(err)
	}
	if attr.QP != nil {
		if _, err := id.CreateQP(attr.PD, *attr.QP); err != nil {
			return fail(err)
		}
	}
	return id, nil
}

// await waits for the next event of a synchronous ID's own channel, like
// ucma_complete, and turns it into an error unless it is want.
func (id *ID) await(ctx context.Context, op string, want EventType) error {
	ch, dev, err := id.use(op)
	if err != nil {
		return err
	}
	ev, err := ch.GetEvent(ctx)
	if err != nil {
		return err
	}
	defer ev.Ack()
	if err := ev.Err(); err != nil {
		return errs.New(op, dev, err)
	}
	if ev.Type != want {
		return errs.New(op, dev, fmt.Errorf("%s instead of %s: %w", ev.Type, want, syscall.ECONNRESET))
	}
	return nil
}

// awaitIfSync waits for want when the ID is synchronous (CreateEP,
// GetRequest); the wait ends with the ID's Close.
func (id *ID) awaitIfSync(op string, want EventType) error {
	id.mu.Lock()
	sync := id.sync
	id.mu.Unlock()
	if !sync {
		return nil
	}
	return id.await(context.Background(), op, want)
}

// GetRequest waits for the next connection request to a passive
// endpoint, like rdma_get_request, and returns its new ID: synchronous,
// on a channel of its own, with its QP created from the endpoint's
// EPAttr.QP. Accept it (which waits for ESTABLISHED) or Reject it.
//
// Errors: an *Error wrapping EINVAL for an ID CreateEP did not make
// passive; ctx.Err(); a REJECTED or failed event's error.
func (id *ID) GetRequest(ctx context.Context) (*ID, error) {
	const op = "get request"
	ch, dev, err := id.use(op)
	if err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	id.mu.Lock()
	sync, qa, pd := id.sync, id.reqQP, id.reqPD
	id.mu.Unlock()
	if !sync {
		return nil, errs.New(op, dev, errArg("not an endpoint of CreateEP: read CONNECT_REQUEST events from the channel"))
	}
	for {
		ev, err := ch.GetEvent(ctx)
		if err != nil {
			return nil, err
		}
		if ev.Type != EventConnectRequest {
			err := ev.Err()
			ev.Ack()
			if err != nil {
				return nil, errs.New(op, dev, err)
			}
			continue
		}
		nid := ev.ID
		ev.Ack()
		own, err := NewEventChannel(&ch.opts)
		if err == nil {
			err = nid.Migrate(own)
		}
		if err != nil {
			nid.Close()
			if own != nil {
				own.Close()
			}
			return nil, errs.New(op, dev, err)
		}
		nid.mu.Lock()
		nid.sync = true
		nid.mu.Unlock()
		if qa != nil {
			if _, err := nid.CreateQP(pd, *qa); err != nil {
				nid.Close()
				return nil, errs.New(op, dev, err)
			}
		}
		return nid, nil
	}
}
