package exporter

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/common/version"
	"golang.org/x/crypto/bcrypt"
)

// syncBuffer is a bytes.Buffer for a writer and a reader in different
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lineWriter hands every line written to it to lines.
type lineWriter struct {
	mu    sync.Mutex
	buf   []byte
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.lines <- string(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

// served is an exporter that run serves in this process.
type served struct {
	base, metrics string // http://ADDRESS and the metrics URL
	stderr        *syncBuffer
	stop          func() int // stops it, returns its exit status
}

// startRun runs run with args on an address of the loopback interface
// the kernel picks, and stops it at the end of the test.
func startRun(t *testing.T, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &lineWriter{lines: make(chan string, 16)}
	s := &served{stderr: &syncBuffer{}}
	code := make(chan int, 1)
	go func() { code <- run(ctx, append([]string{"--web.listen-address=127.0.0.1:0"}, args...), out, s.stderr) }()
	select {
	case line := <-out.lines:
		s.metrics = strings.TrimPrefix(line, "rdma_exporter: serving ")
		if s.metrics == line {
			cancel()
			t.Fatalf("first line %q", line)
		}
	case c := <-code:
		cancel()
		t.Fatalf("exit status %d before serving: %s", c, s.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("not serving after 30 s: %s", s.stderr)
	}
	u := s.metrics[len("http://"):]
	s.base = "http://" + u[:strings.IndexByte(u, '/')]
	s.stop = sync.OnceValue(func() int {
		cancel()
		select {
		case c := <-code:
			return c
		case <-time.After(30 * time.Second):
			t.Errorf("still serving 30 s after it was stopped")
			return -1
		}
	})
	t.Cleanup(func() { s.stop() })
	return s
}

func httpGet(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp, string(b)
}

func parseText(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse the exposition: %v", err)
	}
	return mfs
}

// TestMainFlags: kingpin's flags, the Prometheus exporters' way.
func TestMainFlags(t *testing.T) {
	for _, args := range [][]string{{"--bogus"}, {"extra"}, {"--web.max-requests=many"}, {"--web.listen-address"},
		{"--log.level=loud"}, {"--web.max-requests=-1"}, {"--web.max-connections=-1"}, {"--web.telemetry-path=metrics"}} {
		var out, errb bytes.Buffer
		code := Main(args, &out, &errb)
		if code != 2 || out.Len() != 0 || strings.Count(errb.String(), "\n") != 1 || !strings.HasPrefix(errb.String(), "rdma_exporter: ") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and one line on stderr", args, code, out.String(), errb.String())
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb); code != 0 || errb.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q", args, code, errb.String())
		}
		for _, f := range []string{"--web.listen-address=:9915", "--web.telemetry-path=\"/metrics\"", "--web.config.file", "--[no-]web.systemd-socket",
			"--web.max-requests=40", "--web.max-connections=64", "--path.sysfs=\"/sys\"", "--config.flows", "--[no-]collector.fabric", "--fabric.ca", "--fabric.port", "--log.level", "--log.format", "--[no-]version"} {
			if !strings.Contains(out.String(), f) {
				t.Errorf("%q: the usage has no %s:\n%s", args, f, out.String())
			}
		}
		for _, s := range Sources {
			if !strings.Contains(out.String(), "--[no-]collector."+s) {
				t.Errorf("%q: the usage has no --[no-]collector.%s", args, s)
			}
		}
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"--version"}, &out, &errb); code != 0 || errb.Len() != 0 || !strings.HasPrefix(out.String(), "rdma_exporter, version "+version.Version+" ") {
		t.Errorf("--version: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	for _, off := range Sources {
		o, _, done := parseFlags([]string{"--no-collector." + off}, io.Discard, io.Discard)
		if done {
			t.Fatalf("--no-collector.%s refused", off)
		}
		for _, s := range Sources {
			if *o.on[s] != (s != off) {
				t.Errorf("--no-collector.%s: %s on = %v", off, s, *o.on[s])
			}
		}
	}
	o, _, _ := parseFlags(nil, io.Discard, io.Discard)
	if got := *o.web.WebListenAddresses; len(got) != 1 || got[0] != ":9915" || o.path != "/metrics" || o.sysfsRoot != "/sys" || o.maxRequests != 40 || o.maxConns != 64 {
		t.Errorf("defaults: listen %q, path %q, sysfs %q, max requests %d, max connections %d", got, o.path, o.sysfsRoot, o.maxRequests, o.maxConns)
	}
}

// TestMainServes: the landing page at /, the metrics path with the
// exporter's series and the process's (build info, Go, process, promhttp),
// and a source turned off.
func TestMainServes(t *testing.T) {
	s := startRun(t, "--path.sysfs", fixture, "--web.telemetry-path=/m", "--no-collector.hw_counters")
	resp, body := httpGet(t, nil, s.base+"/")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, `href="/m"`) {
		t.Errorf("GET /: %s %q\n%s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	if resp, _ := httpGet(t, nil, s.base+"/metrics"); resp.StatusCode != 404 {
		t.Errorf("GET /metrics with --web.telemetry-path=/m: %s", resp.Status)
	}
	if s.metrics != s.base+"/m" {
		t.Errorf("serving %s", s.metrics)
	}
	resp, body = httpGet(t, nil, s.metrics)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", s.metrics, resp.Status)
	}
	mfs := parseText(t, body)
	bi := mfs["rdma_exporter_build_info"]
	if bi == nil || len(bi.Metric) != 1 || bi.Metric[0].GetGauge().GetValue() != 1 {
		t.Fatalf("rdma_exporter_build_info: %v", bi)
	}
	labels := map[string]string{}
	for _, l := range bi.Metric[0].Label {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["version"] != version.Version || labels["goversion"] != version.GoVersion {
		t.Errorf("build info labels %v", labels)
	}
	for _, name := range []string{"go_goroutines", "go_info", "go_memstats_alloc_bytes", "process_open_fds", "process_max_fds",
		"process_cpu_seconds_total", "promhttp_metric_handler_requests_total", "promhttp_metric_handler_requests_in_flight",
		"promhttp_metric_handler_errors_total", "node_infiniband_info", "rdma_exporter_source_up"} {
		if mfs[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	if mfs["rdma_hw_stat_total"] != nil {
		t.Error("rdma_hw_stat_total with --no-collector.hw_counters")
	}
	for _, m := range mfs["rdma_exporter_source_up"].GetMetric() {
		if m.Label[0].GetValue() == SourceHwCounters {
			t.Error("source_up for hw_counters with --no-collector.hw_counters")
		}
	}
	if code := s.stop(); code != 0 {
		t.Errorf("exit status %d after a stop: %s", code, s.stderr)
	}
}

// TestMainBasicAuth: a web config file with basic_auth_users asks every
// request for them.
func TestMainBasicAuth(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(cfg, []byte("basic_auth_users:\n  alice: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startRun(t, "--path.sysfs", fixture, "--web.config.file", cfg)
	for _, tc := range []struct {
		user, password string
		want           int
	}{{"", "", 401}, {"alice", "wrong", 401}, {"bob", "s3cret", 401}, {"alice", "s3cret", 200}} {
		for _, u := range []string{s.metrics, s.base + "/"} {
			req, _ := http.NewRequest("GET", u, nil)
			if tc.user != "" {
				req.SetBasicAuth(tc.user, tc.password)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("GET %s as %q/%q: %s, want %d", u, tc.user, tc.password, resp.Status, tc.want)
			}
		}
	}

	bad := filepath.Join(dir, "bad.yml")
	os.WriteFile(bad, []byte("basic_auth_users:\n  alice: not-a-bcrypt-hash\n"), 0o600)
	var out, errb bytes.Buffer
	if code := Main([]string{"--web.config.file", bad}, &out, &errb); code != 2 || strings.Count(errb.String(), "\n") != 1 {
		t.Errorf("a bad web config: exit %d, stderr %q; want 2 and one line", code, errb.String())
	}
}

// TestMainRefusesNonRegularFlows: --config.flows naming a FIFO (or a
// directory, or a device) is refused at once, not read (which would wait
// for a writer for ever).
func TestMainRefusesNonRegularFlows(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "flows.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, tc := range []struct{ path, want string }{{fifo, "named pipe"}, {dir, "directory"}, {os.DevNull, "character device"}} {
		var out, errb syncBuffer
		code := make(chan int, 1)
		go func() { code <- Main([]string{"--path.sysfs", fixture, "--config.flows", tc.path}, &out, &errb) }()
		select {
		case c := <-code:
			if c != 2 || strings.Count(errb.String(), "\n") != 1 || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("--config.flows %s: exit %d, stderr %q; want 2 and one line saying %q", tc.path, c, errb.String(), tc.want)
			}
		case <-time.After(30 * time.Second):
			// Free the goroutine stuck opening the FIFO.
			if f, err := os.OpenFile(tc.path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			t.Fatalf("--config.flows %s: Main still runs after 30 s", tc.path)
		}
	}
}

// blockingGatherer's Gather blocks until release is closed, and names
// its family after the call.
type blockingGatherer struct {
	calls   atomic.Int32
	release chan struct{}
}

func (b *blockingGatherer) Gather() ([]*dto.MetricFamily, error) {
	name := fmt.Sprintf("gather_%d", b.calls.Add(1))
	<-b.release
	return []*dto.MetricFamily{{Name: &name}}, nil
}

// TestCollapsingGatherer: callers that come while a gather runs share
// its result; one whose context ends stops waiting; the next caller
// after it starts another; after close none starts.
func TestCollapsingGatherer(t *testing.T) {
	b := &blockingGatherer{release: make(chan struct{})}
	joined := make(chan struct{}, 16)
	c := newCollapsingGatherer(b)
	c.joined = joined
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() {
		_, err := c.gather(ctx)
		cancelled <- err
	}()
	const n = 8
	results := make(chan []*dto.MetricFamily, n)
	for range n {
		go func() {
			mfs, err := c.gather(context.Background())
			if err != nil {
				t.Error(err)
			}
			results <- mfs
		}()
	}
	for range n + 1 {
		<-joined
	}
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled caller: %v", err)
	}
	close(b.release)
	var first *dto.MetricFamily
	for range n {
		mfs := <-results
		if len(mfs) != 1 || mfs[0].GetName() != "gather_1" || (first != nil && mfs[0] != first) {
			t.Fatalf("a caller got %v", mfs)
		}
		first = mfs[0]
	}
	if got := b.calls.Load(); got != 1 {
		t.Errorf("%d gathers for %d callers at once, want 1", got, n+1)
	}
	c.joined = nil
	if mfs, err := c.Gather(); err != nil || mfs[0].GetName() != "gather_2" {
		t.Errorf("a caller after the gather: %v %v", mfs, err)
	}
	c.close()
	if mfs, err := c.Gather(); !errors.Is(err, errStopping) || b.calls.Load() != 2 {
		t.Errorf("a caller after close: %v %v, %d gathers", mfs, err, b.calls.Load())
	}
}

// blockingCollector's Collect blocks until release is closed.
type blockingCollector struct{ release chan struct{} }

func (blockingCollector) Describe(chan<- *prometheus.Desc) {}

func (b blockingCollector) Collect(ch chan<- prometheus.Metric) {
	<-b.release
	ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("blocking_up", "Help.", nil, nil), prometheus.GaugeValue, 1)
}

// TestMaxRequests: more scrapes at once than --web.max-requests wait for
// one to end, and are answered 503 if none does in time; all are counted
// by code, and those at once share one gather.
func TestMaxRequests(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := blockingCollector{release: make(chan struct{})}
	reg.MustRegister(b)
	h, err := newHTTPHandler(reg, "/metrics", 2, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	joined, waiting := make(chan struct{}, 16), make(chan struct{}, 16)
	h.m.g.joined, h.m.waiting = joined, waiting
	srv := httptest.NewServer(h)
	defer srv.Close()
	codes := make(chan int, 3)
	get := func() {
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Error(err)
			codes <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes <- resp.StatusCode
	}
	go get()
	go get()
	<-joined
	<-joined
	// A third waits no time: 503.
	h.m.wait = 0
	resp, body := httpGet(t, nil, srv.URL+"/metrics")
	if resp.StatusCode != 503 || !strings.Contains(body, "Limit of concurrent requests reached (2)") {
		t.Errorf("a third scrape: %s %q", resp.Status, body)
	}
	// A third that waits long enough gets the slot of one that ends.
	h.m.wait = time.Minute
	go get()
	<-waiting
	close(b.release)
	for range 3 {
		if c := <-codes; c != 200 {
			t.Errorf("a scrape: %d, want 200", c)
		}
	}
	h.m.g.joined, h.m.waiting = nil, nil
	_, body = httpGet(t, nil, srv.URL+"/metrics")
	mfs := parseText(t, body)
	if mfs["blocking_up"] == nil {
		t.Errorf("no blocking_up in\n%s", body)
	}
	byCode := map[string]float64{}
	for _, m := range mfs["promhttp_metric_handler_requests_total"].GetMetric() {
		byCode[m.Label[0].GetValue()] = m.GetCounter().GetValue()
	}
	if byCode["503"] != 1 || byCode["200"] != 3 {
		t.Errorf("promhttp_metric_handler_requests_total %v, want 3 200s and a 503", byCode)
	}
}

// keptConn is a client's keep-alive connection.
type keptConn struct {
	net.Conn
	r *bufio.Reader
}

func dialKept(t *testing.T, addr string) *keptConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &keptConn{Conn: c, r: bufio.NewReader(c)}
}

// get sends a GET of path and reads the answer, leaving the connection
// open.
func (c *keptConn) get(path string) (int, error) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: exporter\r\n\r\n", path); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, err
}

// closedByPeer says whether the server has closed c (waiting up to 10 s).
func (c *keptConn) closedByPeer() bool {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.r.ReadByte()
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// TestConnLimiter: at the bound, the connection idle the longest is
// closed to make room, then one that has sent nothing for the grace;
// busy ones are never closed, and a new connection waits for one of them.
func TestConnLimiter(t *testing.T) {
	cl := newConnLimiter(2)
	cl.grace = 100 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}, 4), make(chan struct{})
	events := make(chan struct{}, 1024)
	srv := &http.Server{
		ConnState: func(c net.Conn, s http.ConnState) {
			cl.connState(c, s)
			events <- struct{}{}
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/busy" {
				entered <- struct{}{}
				<-release
			}
			io.WriteString(w, "ok\n")
		}),
	}
	go srv.Serve(cl.listener(ln))
	defer srv.Close()
	addr := ln.Addr().String()
	// settle waits for the limiter to hold so many connections in each
	// state (the server marks one idle after it has answered).
	settle := func(idle, silent int) {
		t.Helper()
		for {
			n := map[http.ConnState]int{}
			cl.mu.Lock()
			for c := range cl.conns {
				n[c.state]++
			}
			cl.mu.Unlock()
			if n[http.StateIdle] == idle && n[http.StateNew] == silent && len(n) <= 2 {
				return
			}
			select {
			case <-events:
			case <-time.After(10 * time.Second):
				t.Fatalf("connections %v, want %d idle and %d silent", n, idle, silent)
			}
		}
	}

	// Idle ones, oldest first.
	var kept []*keptConn
	for i := range 2 {
		c := dialKept(t, addr)
		if code, err := c.get("/"); code != 200 {
			t.Fatalf("GET: %d %v", code, err)
		}
		settle(i+1, 0)
		kept = append(kept, c)
	}
	c1, c2 := kept[0], kept[1]
	c3 := dialKept(t, addr)
	if code, err := c3.get("/"); code != 200 {
		t.Fatalf("a third connection at the bound: %d %v", code, err)
	}
	if !c1.closedByPeer() {
		t.Error("the connection idle the longest is still open")
	}
	settle(2, 0)
	c4 := dialKept(t, addr)
	if code, err := c4.get("/"); code != 200 {
		t.Fatalf("a fourth connection at the bound: %d %v", code, err)
	}
	if !c2.closedByPeer() {
		t.Error("the connection idle the longest (the second) is still open")
	}

	// Silent ones, after the grace.
	c3.Close()
	c4.Close()
	settle(0, 0)
	s1, s2 := dialKept(t, addr), dialKept(t, addr)
	settle(0, 2)
	c5 := dialKept(t, addr)
	if code, err := c5.get("/"); code != 200 {
		t.Fatalf("a connection after two silent ones: %d %v", code, err)
	}
	if !s1.closedByPeer() {
		t.Error("the connection silent the longest is still open")
	}
	c5.Close()
	s2.Close()
	settle(0, 0)

	// Busy ones are kept: a new connection waits.
	b1, b2 := dialKept(t, addr), dialKept(t, addr)
	busy := make(chan int, 2)
	for _, c := range []*keptConn{b1, b2} {
		go func() {
			code, _ := c.get("/busy")
			busy <- code
		}()
	}
	<-entered
	<-entered
	c6 := dialKept(t, addr)
	got := make(chan int, 1)
	go func() {
		code, _ := c6.get("/")
		got <- code
	}()
	select {
	case code := <-got:
		t.Errorf("answered %d with two busy connections at a bound of 2", code)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	for range 2 {
		if code := <-busy; code != 200 {
			t.Errorf("a busy connection: %d", code)
		}
	}
	if code := <-got; code != 200 {
		t.Errorf("the waiting connection: %d", code)
	}
}

// --sysfs.max-open-files reaches the exporter's limit: 0 holds no file.
func TestMaxOpenFilesFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, DefaultMaxOpenFiles},
		{[]string{"--sysfs.max-open-files=0"}, -1},
		{[]string{"--sysfs.max-open-files=5"}, 5},
	} {
		o, status, done := parseFlags(tc.args, io.Discard, io.Discard)
		if done {
			t.Fatalf("%v: status %d", tc.args, status)
		}
		if got := o.config(nil).MaxOpenFiles; got != tc.want {
			t.Errorf("%v: MaxOpenFiles %d, want %d", tc.args, got, tc.want)
		}
	}
}
