//go:build integration

package diags

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/sysfs"
	"github.com/purerdma/rdma/umad"
)

// TestVMUmadSendServe: umad serve on rxe1 answers umad send from rxe0, by
// GID; a send to nobody fails with a timeout.
func TestVMUmadSendServe(t *testing.T) {
	vmtest.Require(t)
	f, err := sysfs.New("")
	if err != nil {
		t.Fatal(err)
	}
	p1, err := f.Port(vmtest.Dev1, 1)
	if err != nil {
		t.Fatal(err)
	}
	g, err := p1.GID(0)
	if err != nil {
		t.Fatal(err)
	}
	sout := &announceWriter{want: "serving ", seen: make(chan struct{})}
	var serr bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	var serveErr error
	go func() {
		defer wg.Done()
		serveErr = DefaultEnv().run([]string{"purerdma", "umad", "serve", "-C", "rxe1", "-P", "1", "-c", "10", "--data", "pong"}, sout, &serr)
	}()
	// Send once the server is registered: before that the kernel's MAD
	// layer answers a Get with status 0x000c, which umad send reports as
	// the failure it is.
	select {
	case <-sout.seen:
	case <-time.After(30 * time.Second):
		t.Fatalf("umad serve did not register within 30 s: %s", serr.String())
	}
	var out, errb bytes.Buffer
	err = DefaultEnv().run([]string{"purerdma", "umad", "send", "-C", "rxe0", "-P", "1", "--dgid", g.GID.Addr().String(), "-c", "10", "--data", "ping", "-t", "200", "--retries", "5"}, &out, &errb)
	if err != nil {
		// The server still waits for its ten requests: do not wait for it.
		t.Fatalf("send: %v %s\nserve so far: %s", err, errb.String(), sout.String())
	}
	wg.Wait()
	if serveErr != nil {
		t.Fatalf("serve: %v %s", serveErr, serr.String())
	}
	if strings.Count(out.String(), `data "pong"`) != 10 || !strings.Contains(out.String(), "10 round trips") ||
		strings.Count(sout.String(), `data "ping"`) != 10 || !strings.Contains(sout.String(), "answered 10 requests") {
		t.Fatalf("send:\n%s\nserve:\n%s", out.String(), sout.String())
	}
	t.Logf("send:\n%s\nserve:\n%s", out.String(), sout.String())

	out.Reset()
	// Nobody serves rxe1 any more. (A Get would be answered by the
	// kernel with status 0x000c; method 3, Send, gets no answer at all.)
	err = DefaultEnv().run([]string{"purerdma", "umad", "send", "-C", "rxe0", "--dgid", g.GID.Addr().String(), "--method", "3", "-t", "50", "--retries", "1"}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "no response after 2 tries") {
		t.Fatalf("send to nobody: %v", err)
	}
	if !errors.Is(err, umad.ErrTimeout) {
		t.Fatalf("not a timeout: %v", err)
	}
}

// announceWriter collects a tool's output and closes seen when it first
// holds want; safe for one writer and concurrent readers.
type announceWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	done bool
}

func (w *announceWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if !w.done && strings.Contains(w.buf.String(), w.want) {
		w.done = true
		close(w.seen)
	}
	return n, err
}

func (w *announceWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
