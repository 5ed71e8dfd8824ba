package verbs

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/purerdma/rdma/internal/testmodel/verbstest"
	"github.com/purerdma/rdma/uverbs"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// asyncwatch prints ibv_asyncwatch's lines for the events the fake device
// posts, names the device and port events and calls the others
// "unexpected", and ends cleanly (status 0) when its context is cancelled.
func TestAsyncwatch(t *testing.T) {
	v := verbstest.RXE()
	b := verbstest.New(t, v)
	ctx, cancel := context.WithCancel(context.Background())
	env := &Env{Uverbs: b.Opts, AsyncContext: func() (context.Context, context.CancelFunc) { return ctx, cancel }}
	t.Cleanup(cancel)

	var out, errb lockedBuffer
	done := make(chan error, 1)
	go func() { done <- env.run([]string{"purerdma", "asyncwatch", "-d", "rxe0"}, &out, &errb) }()
	wait := func(s string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), s); {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in %q (stderr %q)", s, out.String(), errb.String())
			}
			time.Sleep(time.Millisecond)
		}
	}
	wait("rxe0: async event FD ")
	v.PostAsyncEvent(uint32(uverbs.EventPortErr), 1)
	v.PostAsyncEvent(uint32(uverbs.EventPortActive), 1)
	v.PostAsyncEvent(uint32(uverbs.EventGIDChange), 1)
	v.PostAsyncEvent(uint32(uverbs.EventSRQLimitReached), 7)
	wait("(15)")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("asyncwatch ended with %v; stderr %q", err, errb.String())
	}
	want := "  event_type IBV_EVENT_PORT_ERR (10), port 1\n" +
		"  event_type IBV_EVENT_PORT_ACTIVE (9), port 1\n" +
		"  event_type IBV_EVENT_GID_CHANGE (18), port 1\n" +
		"  event_type unexpected (15), port 7\n"
	if got := out.String(); !strings.HasSuffix(got, want) || strings.Count(got, "\n") != 5 {
		t.Errorf("output:\n%s\nwant it to end with\n%s", got, want)
	}
}

func TestAsyncwatchArgs(t *testing.T) {
	b := verbstest.New(t, verbstest.RXE())
	env := &Env{Uverbs: b.Opts, AsyncContext: signalContext}
	if out, _, code := env.runTool("asyncwatch", "-h"); code != 0 || !strings.HasPrefix(out, "Usage:\n  ibv_asyncwatch ") {
		t.Errorf("-h: %d %q", code, out)
	}
	if out, errs, code := env.runTool("asyncwatch", "-x"); code != 1 || errs != "ibv_asyncwatch: invalid option -- 'x'\n" || !strings.HasPrefix(out, "Usage:") {
		t.Errorf("-x: %d %q %q", code, out, errs)
	}
	if _, errs, code := env.runTool("asyncwatch", "-d", "nosuch"); code != 1 || errs != "IB device nosuch not found\n" {
		t.Errorf("-d nosuch: %d %q", code, errs)
	}
}
