package uverbs

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestAsyncEvents(t *testing.T) {
	b := newBed(t, rxe0())
	c := b.open(t, "rxe0")
	v := b.devs["rxe0"]
	pd, _ := c.AllocPD()
	cq, _ := c.CreateCQ(CQAttr{CQE: 4})
	qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: rcCap()})
	if err != nil {
		t.Fatal(err)
	}
	v.PostAsyncEvent(uint32(EventQPFatal), qp.uh)
	v.PostAsyncEvent(uint32(EventCQErr), cq.uh)
	v.PostAsyncEvent(uint32(EventPortActive), 1)
	ctx := context.Background()
	for _, want := range []func(AsyncEvent) bool{
		func(e AsyncEvent) bool { return e.Type == EventQPFatal && e.QP == qp },
		func(e AsyncEvent) bool { return e.Type == EventCQErr && e.CQ == cq },
		func(e AsyncEvent) bool { return e.Type == EventPortActive && e.Port == 1 },
	} {
		e, err := c.AsyncEvent(ctx)
		if err != nil || !want(e) {
			t.Fatalf("AsyncEvent = %v, %v", e, err)
		}
	}
	// A deadline ends the wait.
	dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.AsyncEvent(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("AsyncEvent past the deadline: %v", err)
	}
	// Cancelling the context wakes a read in progress.
	cctx0, cancel0 := context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel0)
	start := time.Now()
	if _, err := c.AsyncEvent(cctx0); !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Errorf("AsyncEvent cancelled while waiting: %v after %v", err, time.Since(start))
	}
	// A cancelled context returns at once.
	cctx, cancel2 := context.WithCancel(ctx)
	cancel2()
	if _, err := c.AsyncEvent(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("AsyncEvent with a cancelled context: %v", err)
	}
}

func TestAsyncEventUnblockedByClose(t *testing.T) {
	b := newBed(t, rxe0())
	c, err := Open("rxe0", b.opts)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := c.AsyncEvent(context.Background())
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("pending AsyncEvent after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock AsyncEvent")
	}
}

func TestCompletionChannel(t *testing.T) {
	b := newBed(t, rxe0())
	c := b.open(t, "rxe0")
	v := b.devs["rxe0"]
	ch, err := c.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(CQAttr{CQE: 4, Channel: ch, CompVector: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := cq.ReqNotify(true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(v.Log(), ","), "req notify cq "+itoa(cq.Handle())) {
		t.Errorf("REQ_NOTIFY_CQ did not reach the kernel: %v", v.Log())
	}
	if !v.PostCompEvent(cq.Handle()) {
		t.Fatal("the fake has no channel for the CQ")
	}
	got, err := ch.GetEvent(context.Background())
	if err != nil || got != cq {
		t.Fatalf("GetEvent = %p, %v; want %p", got, err, cq)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := ch.GetEvent(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GetEvent with nothing queued: %v", err)
	}
	wantErrno(t, ch.Close(), syscall.EBUSY)
	if err := cq.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.GetEvent(context.Background()); !errors.Is(err, os.ErrClosed) {
		t.Errorf("GetEvent on a closed channel: %v", err)
	}
	if _, err := c.CreateCQ(CQAttr{CQE: 4, Channel: ch}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("CreateCQ with a closed channel: %v", err)
	}
}

// Device removal: calls fail EIO naming the device, the async file reports
// DEVICE_FATAL, nothing panics, and Close succeeds.
func TestDeviceRemoval(t *testing.T) {
	b := newBed(t, rxe0())
	c, err := Open("rxe0", b.opts)
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := c.CreateCompChannel()
	pd, _ := c.AllocPD()
	cq, _ := c.CreateCQ(CQAttr{CQE: 4, Channel: ch})
	qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: cq, Cap: rcCap()})
	if err != nil {
		t.Fatal(err)
	}
	b.devs["rxe0"].Remove()
	_, err = c.QueryPort(1)
	wantErrno(t, err, syscall.EIO)
	if !strings.Contains(err.Error(), "rxe0") {
		t.Errorf("%v does not name the device", err)
	}
	_, err = c.CreateCQ(CQAttr{CQE: 4})
	wantErrno(t, err, syscall.EIO)
	wantErrno(t, qp.Modify(&QPAttr{State: QPStateErr}, QPAttrState), syscall.EIO)
	e, err := c.AsyncEvent(context.Background())
	if err != nil || e.Type != EventDeviceFatal {
		t.Errorf("AsyncEvent after removal = %v, %v", e, err)
	}
	if _, err := c.AsyncEvent(context.Background()); !errors.Is(err, syscall.EIO) {
		t.Errorf("second AsyncEvent after removal: %v", err)
	}
	if err := qp.Close(); err != nil {
		t.Errorf("QP Close after removal: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close after removal: %v", err)
	}
}

// TestGetEventBackgroundAllocatesNothing: with a context that cannot be
// done, GetEvent reads a queued event without allocating (an event loop
// calls it once per completion); a cancellable context still returns.
func TestGetEventBackgroundAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	b := newBed(t, rxe0())
	c := b.open(t, "rxe0")
	v := b.devs["rxe0"]
	ch, err := c.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(CQAttr{CQE: 4, Channel: ch})
	if err != nil {
		t.Fatal(err)
	}
	const runs = 100
	for range runs + 1 { // AllocsPerRun runs the function once more to warm up
		if !v.PostCompEvent(cq.Handle()) {
			t.Fatal("the fake has no channel for the CQ")
		}
	}
	bg := context.Background()
	allocs := testing.AllocsPerRun(runs, func() {
		if got, err := ch.GetEvent(bg); err != nil || got != cq {
			t.Fatalf("GetEvent = %p, %v; want %p", got, err, cq)
		}
	})
	if allocs != 0 {
		t.Errorf("GetEvent(context.Background()) allocates %.1f times a call, want 0", allocs)
	}
	v.PostCompEvent(cq.Handle())
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	if got, err := ch.GetEvent(ctx); err != nil || got != cq {
		t.Errorf("GetEvent with a cancellable context = %p, %v", got, err)
	}
}

// With a context that cannot be done, GetEvent waits without the runtime
// poller: an event wakes it, and so does closing the channel
// (os.ErrClosed); a cancellable wait before and after still works.
func TestGetEventBlockingWait(t *testing.T) {
	b := newBed(t, rxe0())
	c := b.open(t, "rxe0")
	v := b.devs["rxe0"]
	ch, err := c.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(CQAttr{CQE: 4, Channel: ch})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		cq  *CQ
		err error
	}
	getAsync := func(ctx context.Context) <-chan result {
		r := make(chan result, 1)
		go func() {
			got, err := ch.GetEvent(ctx)
			r <- result{got, err}
		}()
		time.Sleep(20 * time.Millisecond)
		return r
	}
	await := func(r <-chan result) result {
		t.Helper()
		select {
		case x := <-r:
			return x
		case <-time.After(5 * time.Second):
			t.Fatal("GetEvent did not return")
			return result{}
		}
	}
	cctx, cancel := context.WithCancel(context.Background())
	r := getAsync(cctx)
	cancel()
	if x := await(r); !errors.Is(x.err, context.Canceled) {
		t.Errorf("GetEvent cancelled: %v", x.err)
	}
	r = getAsync(context.Background())
	v.PostCompEvent(cq.Handle())
	if x := await(r); x.err != nil || x.cq != cq {
		t.Errorf("GetEvent woken by an event = %p, %v; want %p", x.cq, x.err, cq)
	}
	r = getAsync(context.WithoutCancel(cctx))
	v.PostCompEvent(cq.Handle())
	if x := await(r); x.err != nil || x.cq != cq {
		t.Errorf("GetEvent(WithoutCancel) = %p, %v", x.cq, x.err)
	}
	v.PostCompEvent(cq.Handle())
	tctx, tcancel := context.WithTimeout(context.Background(), time.Minute)
	defer tcancel()
	if got, err := ch.GetEvent(tctx); err != nil || got != cq {
		t.Errorf("GetEvent with a deadline = %p, %v", got, err)
	}
	if err := cq.Close(); err != nil {
		t.Fatal(err)
	}
	r = getAsync(context.Background())
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	if x := await(r); !errors.Is(x.err, os.ErrClosed) {
		t.Errorf("GetEvent waiting when the channel closed: %v, want os.ErrClosed", x.err)
	}
}

// ReqNotify sends each CQ's own request, with the solicited flag asked
// for, from the request it marshalled on first use. (Whether it allocates
// is not measured here: the fake kernel's decoding and log allocate.)
func TestReqNotifyReusesItsRequest(t *testing.T) {
	b := newBed(t, rxe0())
	c := b.open(t, "rxe0")
	v := b.devs["rxe0"]
	ch, err := c.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	cq1, err := c.CreateCQ(CQAttr{CQE: 4, Channel: ch})
	if err != nil {
		t.Fatal(err)
	}
	cq2, err := c.CreateCQ(CQAttr{CQE: 4})
	if err != nil {
		t.Fatal(err)
	}
	h1, h2 := itoa(cq1.Handle()), itoa(cq2.Handle())
	for _, step := range []struct {
		cq        *CQ
		solicited bool
		want      string
	}{
		{cq1, false, "req notify cq " + h1}, {cq1, true, "req notify cq " + h1 + " solicited"},
		{cq2, true, "req notify cq " + h2 + " solicited"}, {cq1, false, "req notify cq " + h1},
		{cq2, false, "req notify cq " + h2}, {cq1, true, "req notify cq " + h1 + " solicited"},
	} {
		if err := step.cq.ReqNotify(step.solicited); err != nil {
			t.Fatal(err)
		}
		if log := v.Log(); len(log) == 0 || log[len(log)-1] != step.want {
			t.Errorf("after ReqNotify(%v): log ends %q, want %q", step.solicited, log[len(log)-1:], step.want)
		}
	}
	// A CQ made again into the same memory sends its own handle.
	if err := cq2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateCQInto(cq2, CQAttr{CQE: 4}); err != nil {
		t.Fatal(err)
	}
	cq2.ReqNotify(false)
	if log := v.Log(); log[len(log)-1] != "req notify cq "+itoa(cq2.Handle()) {
		t.Errorf("ReqNotify of a CQ made again: log ends %q", log[len(log)-1])
	}
	if err := cq1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cq1.ReqNotify(false); !errors.Is(err, os.ErrClosed) {
		t.Errorf("ReqNotify after Close: %v", err)
	}
}
