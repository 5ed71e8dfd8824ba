package exporter

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/mdlayher/vsock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
)

// The HTTP server's time limits. There is no server-wide WriteTimeout: it
// runs from the end of the request's headers, so it would cut a slow
// scrape (a fabric's, say) short, which is why node_exporter sets none.
// A response's writing is bounded instead from when it is ready
// (responseWriteTimeout), so that a client that stops reading cannot hold
// its connection for ever.
const (
	readHeaderTimeout    = 10 * time.Second // a request's headers, from the connection's first byte
	readTimeout          = 30 * time.Second // a request, body included; the metrics path lifts it once the request is read
	idleTimeout          = 2 * time.Minute  // a keep-alive connection between requests
	responseWriteTimeout = time.Minute      // writing a response, from when it is ready
	shutdownTimeout      = 5 * time.Second  // waiting for scrapes under way at SIGTERM
	// maxRequestsWait is how long a scrape beyond --web.max-requests
	// waits for one to end before it is answered 503.
	maxRequestsWait = 5 * time.Second
	// newConnGrace is how long a connection that has sent nothing is
	// spared when a connLimiter looks for one to close.
	newConnGrace = time.Second
)

// serveHTTP serves the exporter c, with the Go and process collectors,
// rdma_exporter_build_info and promhttp's own series, on the listeners
// o.web names (exporter-toolkit's flags: TLS and basic auth come from its
// web config file) until ctx is done.
func serveHTTP(ctx context.Context, c prometheus.Collector, o *options, log *slog.Logger, stdout io.Writer) error {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		c,
		versioncollector.NewCollector("rdma_exporter"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	h, err := newHTTPHandler(reg, o.path, o.maxRequests, log)
	if err != nil {
		return err
	}
	lns, err := listen(o.web)
	if err != nil {
		return err
	}
	scheme := "http"
	if tlsConfigured(*o.web.WebConfigFile) {
		scheme = "https"
	}
	var lim *connLimiter
	if o.maxConns > 0 {
		lim = newConnLimiter(o.maxConns)
	}
	errLog := slog.NewLogLogger(log.Handler(), slog.LevelError)
	servers := make([]*http.Server, len(lns))
	errc := make(chan error, len(lns))
	for i, ln := range lns {
		srv := &http.Server{
			Handler:           h,
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       readTimeout,
			IdleTimeout:       idleTimeout,
			ErrorLog:          errLog,
		}
		if lim != nil {
			ln = lim.listener(ln)
			srv.ConnState = lim.connState
		}
		servers[i] = srv
		fmt.Fprintf(stdout, "rdma_exporter: serving %s://%s%s\n", scheme, ln.Addr(), o.path)
		// A server of its own for each listener: web.Serve wraps its
		// handler for the web config.
		go func() { errc <- web.Serve(ln, srv, o.web, log) }()
	}
	running := len(servers)
	select {
	case <-ctx.Done():
	case err = <-errc:
		// A server stopped by itself: stop the others too.
		running--
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	for _, srv := range servers {
		if srv.Shutdown(sctx) != nil {
			srv.Close() // scrapes still under way: their clients lose them
		}
	}
	for ; running > 0; running-- {
		if e := <-errc; err == nil {
			err = e
		}
	}
	// Handlers may still run after a Close: have them start no gather.
	h.m.g.close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// newHTTPHandler returns the exporter's HTTP handler: reg's series at
// path (see metricsHandler), counted by promhttp's
// promhttp_metric_handler_requests_total and _requests_in_flight, and a
// landing page linking it at / (unless path is /).
func newHTTPHandler(reg *prometheus.Registry, path string, maxRequests int, log *slog.Logger) (*router, error) {
	mh := &metricsHandler{
		g:    newCollapsingGatherer(reg),
		max:  maxRequests,
		wait: maxRequestsWait,
		log:  log,
		opts: promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError),
			Registry: reg, // promhttp_metric_handler_errors_total
		},
	}
	if maxRequests > 0 {
		mh.inFlight = make(chan struct{}, maxRequests)
	}
	// Registers promhttp_metric_handler_errors_total now; the encoders'
	// handlers find it registered and count into it.
	promhttp.HandlerFor(reg, mh.opts)
	r := &router{path: path, m: mh, metrics: promhttp.InstrumentMetricHandler(reg, mh)}
	if path != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "RDMA Exporter",
			Description: "Prometheus exporter for the RDMA devices of a host",
			Version:     version.Info(),
			Links:       []web.LandingLinks{{Address: path, Text: "Metrics"}},
			Profiling:   "false",
		})
		if err != nil {
			return nil, err
		}
		r.landing = landing
	}
	return r, nil
}

// router serves path with metrics and every other path with landing
// (which answers 404 but for /); it bounds the writing of every response
// (responseWriteTimeout). The paths are compared as they are, not as
// http.ServeMux patterns.
type router struct {
	path             string
	metrics, landing http.Handler
	m                *metricsHandler // metrics, uninstrumented
}

// ServeHTTP implements http.Handler.
func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// An error only means the connection has no deadlines (a test's
	// recorder).
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(responseWriteTimeout))
	switch {
	case r.URL.Path == rt.path:
		rt.metrics.ServeHTTP(w, r)
	case rt.landing != nil:
		rt.landing.ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

// metricsHandler serves a scrape: at most max at once (one more waits
// for a slot up to maxRequestsWait, then is answered 503, as promhttp's
// MaxRequestsInFlight answers at once), each gathered through a
// collapsingGatherer and encoded by promhttp (content negotiation,
// compression, errors).
type metricsHandler struct {
	g        *collapsingGatherer
	max      int
	inFlight chan struct{} // nil: no limit
	wait     time.Duration // maxRequestsWait
	// waiting, when not nil, is sent to when a scrape waits for a slot:
	// the tests' way to know.
	waiting  chan<- struct{}
	opts     promhttp.HandlerOpts
	encoders sync.Pool // of *encoder
	log      *slog.Logger
}

// encoder is a promhttp handler for one scrape at a time: promhttp asks
// its Gatherer, without the request, for the families, so each scrape's
// are set in g for the scrape's time. Its options set no in-flight limit
// (the metricsHandler's is the one); the encoders count into the one
// promhttp_metric_handler_errors_total registered in opts.Registry.
type encoder struct {
	g gathered
	h http.Handler
}

// ServeHTTP implements http.Handler.
func (h *metricsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.inFlight != nil {
		if !h.acquire(r.Context()) {
			if r.Context().Err() == nil {
				http.Error(w, fmt.Sprintf("Limit of concurrent requests reached (%d), try again later.", h.max), http.StatusServiceUnavailable)
			}
			return
		}
		defer func() { <-h.inFlight }()
	}
	rc := http.NewResponseController(w)
	if r.Body == nil || r.Body == http.NoBody {
		// The request has been read: the read timeout is not to end the
		// scrape (net/http cancels the request's context when the
		// connection's read deadline passes).
		_ = rc.SetReadDeadline(time.Time{})
	}
	mfs, err := h.g.gather(r.Context())
	if r.Context().Err() != nil {
		h.log.Debug("scrape abandoned: the client has gone", "remote", r.RemoteAddr)
		return
	}
	_ = rc.SetWriteDeadline(time.Now().Add(responseWriteTimeout))
	enc, ok := h.encoders.Get().(*encoder)
	if !ok {
		enc = &encoder{}
		enc.h = promhttp.HandlerFor(&enc.g, h.opts)
	}
	enc.g = gathered{mfs, err}
	enc.h.ServeHTTP(w, r)
	enc.g = gathered{}
	h.encoders.Put(enc)
}

// acquire takes an in-flight slot, waiting for one up to h.wait while
// ctx lasts: the scrapes that hold them may be waiting for a gather that
// is nearly done, or for the end of a client that has gone.
func (h *metricsHandler) acquire(ctx context.Context) bool {
	select {
	case h.inFlight <- struct{}{}:
		return true
	default:
	}
	if h.waiting != nil {
		h.waiting <- struct{}{}
	}
	t := time.NewTimer(h.wait)
	defer t.Stop()
	select {
	case h.inFlight <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// gathered is a Gather's result as a prometheus.Gatherer.
type gathered struct {
	mfs []*dto.MetricFamily
	err error
}

// Gather implements prometheus.Gatherer.
func (g gathered) Gather() ([]*dto.MetricFamily, error) { return g.mfs, g.err }

// collapsingGatherer runs one Gather of g at a time: a caller that comes
// while one runs waits for that one's result instead of starting another,
// so that a storm of scrapes costs one gather where it would cost one
// each (the Exporter reads its sources one scrape at a time anyway). The
// families are shared between the callers; promhttp only reads them. A
// caller whose context is done stops waiting; the gather goes on for the
// others (a Gather cannot be stopped) and no other starts before it ends.
type collapsingGatherer struct {
	g      prometheus.Gatherer
	mu     sync.Mutex
	cur    *gathering // the gather under way, nil when none
	closed bool       // by close: no gather is to start
	// joined, when not nil, is sent to when a caller has joined or
	// started a gather and waits for it: the tests' way to know.
	joined chan<- struct{}
}

// gathering is one Gather: its result once done is closed.
type gathering struct {
	done chan struct{}
	mfs  []*dto.MetricFamily
	err  error
}

func newCollapsingGatherer(g prometheus.Gatherer) *collapsingGatherer {
	return &collapsingGatherer{g: g}
}

// Gather implements prometheus.Gatherer: gather without a context.
func (c *collapsingGatherer) Gather() ([]*dto.MetricFamily, error) {
	return c.gather(context.Background())
}

// gather returns the result of the gather under way, or of a new one when
// none is; or ctx's error when ctx is done first.
func (c *collapsingGatherer) gather(ctx context.Context) ([]*dto.MetricFamily, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // its client has gone: start no gather for it
	}
	c.mu.Lock()
	g := c.cur
	if c.closed && g == nil {
		c.mu.Unlock()
		return nil, errStopping
	}
	if g == nil {
		g = &gathering{done: make(chan struct{})}
		c.cur = g
		go c.run(g)
	}
	c.mu.Unlock()
	if c.joined != nil {
		c.joined <- struct{}{}
	}
	select {
	case <-g.done:
		return g.mfs, g.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// errStopping is the gather of a scrape that comes as the exporter stops.
var errStopping = errors.New("the exporter is stopping")

// close has the gathers to come fail, and waits for the one under way:
// then the gatherer no longer reads the sources.
func (c *collapsingGatherer) close() {
	c.mu.Lock()
	c.closed = true
	g := c.cur
	c.mu.Unlock()
	if g != nil {
		<-g.done
	}
}

func (c *collapsingGatherer) run(g *gathering) {
	g.mfs, g.err = c.g.Gather()
	c.mu.Lock()
	c.cur = nil
	c.mu.Unlock()
	close(g.done)
}

// listen opens the listeners exporter-toolkit's flags name: systemd's
// socket-activated ones with --web.systemd-socket, else one for each
// --web.listen-address (TCP, or vsock for vsock://:PORT), as
// web.ListenAndServe would; Main opens them itself to wrap them
// (connLimiter) and to say where it serves.
func listen(f *web.FlagConfig) ([]net.Listener, error) {
	if f.WebSystemdSocket != nil && *f.WebSystemdSocket {
		all, err := activation.Listeners()
		if err != nil {
			return nil, err
		}
		var lns []net.Listener
		for _, l := range all {
			if l != nil {
				lns = append(lns, l)
			}
		}
		if len(lns) == 0 {
			return nil, errors.New("--web.systemd-socket: systemd passed no listening socket")
		}
		return lns, nil
	}
	var lns []net.Listener
	for _, a := range *f.WebListenAddresses {
		l, err := listenOn(a)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, err
		}
		lns = append(lns, l)
	}
	if len(lns) == 0 {
		return nil, web.ErrNoListeners
	}
	return lns, nil
}

// listenOn listens on one --web.listen-address.
func listenOn(address string) (net.Listener, error) {
	rest, ok := strings.CutPrefix(address, "vsock://")
	if !ok {
		return net.Listen("tcp", address)
	}
	_, p, err := net.SplitHostPort(rest)
	if err != nil {
		return nil, fmt.Errorf("--web.listen-address %s: %w", address, err)
	}
	port, err := strconv.ParseUint(p, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("--web.listen-address %s: bad port: %w", address, err)
	}
	return vsock.Listen(uint32(port), nil)
}

// tlsConfigured says whether the web config file (validated) turns TLS
// on: it names a certificate.
func tlsConfigured(file string) bool {
	if file == "" {
		return false
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	var c web.Config
	if yaml.Unmarshal(b, &c) != nil {
		return false
	}
	return c.TLSConfig.TLSCertPath != "" || c.TLSConfig.TLSCert != ""
}

// connLimiter keeps at most max connections served over the listeners it
// wraps, so that connections cannot use up the process's file
// descriptors (which its sysfs files, netlink sockets and flows need
// too). When a connection comes at the bound it closes the one idle the
// longest between two requests (or one that has sent nothing for
// newConnGrace) to make room, as an HTTP server may close an idle
// keep-alive connection at any time; with none to close, the new one
// waits for one to end, and accepts stop meanwhile: further connections
// wait in the kernel's listen backlog, which costs no descriptor here.
// So at most max+1 are open for each listener. The http.Server needs
// connState as its ConnState, for the connections' states.
type connLimiter struct {
	grace time.Duration // newConnGrace
	slots chan struct{} // one per open connection
	idle  chan struct{} // a connection has gone idle (a wake-up, not a count)
	mu    sync.Mutex
	conns map[*limitedConn]struct{}
}

func newConnLimiter(max int) *connLimiter {
	return &connLimiter{
		grace: newConnGrace,
		slots: make(chan struct{}, max),
		idle:  make(chan struct{}, 1),
		conns: map[*limitedConn]struct{}{},
	}
}

// listener wraps l in the limiter.
func (cl *connLimiter) listener(l net.Listener) net.Listener {
	return &limitListener{Listener: l, cl: cl, done: make(chan struct{})}
}

// connState is the http.Server's ConnState hook: it records c's state.
func (cl *connLimiter) connState(c net.Conn, s http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	cl.mu.Lock()
	if _, open := cl.conns[lc]; open {
		lc.state, lc.since = s, time.Now()
	}
	cl.mu.Unlock()
	if s == http.StateIdle {
		select {
		case cl.idle <- struct{}{}:
		default:
		}
	}
}

// errAgain is acquire's note to itself to look again.
var errAgain = errors.New("look again")

// acquire takes a slot for a new connection that has been accepted,
// making room when there is none (see connLimiter), or fails when done is
// closed.
func (cl *connLimiter) acquire(done <-chan struct{}) error {
	for {
		select {
		case cl.slots <- struct{}{}:
			return nil
		case <-done:
			return net.ErrClosed
		default:
		}
		var timeout <-chan time.Time
		var t *time.Timer
		if wait := cl.evict(time.Now()); wait > 0 {
			t = time.NewTimer(wait)
			timeout = t.C
		}
		err := errAgain
		select {
		case cl.slots <- struct{}{}:
			err = nil
		case <-cl.idle: // look again
		case <-timeout:
		case <-done:
			err = net.ErrClosed
		}
		if t != nil {
			t.Stop()
		}
		if err != errAgain {
			return err
		}
	}
}

// evict closes the connection idle the longest, or else the one that has
// sent nothing for the longest if that is the grace or more. When it
// closes none it returns how long until a silent one may be closed (0:
// none is open).
func (cl *connLimiter) evict(now time.Time) time.Duration {
	var idle, silent *limitedConn
	var idleSince, silentSince time.Time
	cl.mu.Lock()
	for c := range cl.conns {
		switch c.state {
		case http.StateIdle:
			if idle == nil || c.since.Before(idleSince) {
				idle, idleSince = c, c.since
			}
		case http.StateNew:
			if silent == nil || c.since.Before(silentSince) {
				silent, silentSince = c, c.since
			}
		}
	}
	cl.mu.Unlock()
	switch {
	case idle != nil:
		idle.Close()
	case silent == nil:
	case now.Sub(silentSince) >= cl.grace:
		silent.Close()
	default:
		return silentSince.Add(cl.grace).Sub(now)
	}
	return 0
}

// limitListener is a listener of a connLimiter.
type limitListener struct {
	net.Listener
	cl        *connLimiter
	done      chan struct{}
	closeOnce sync.Once
}

// Accept accepts a connection, then waits for a slot for it (so that
// room is made only for a connection that is there): the bound's
// connections and that one are open, the others wait in the backlog.
func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := l.cl.acquire(l.done); err != nil {
		c.Close()
		return nil, err
	}
	lc := &limitedConn{Conn: c, cl: l.cl, state: http.StateNew, since: time.Now()}
	l.cl.mu.Lock()
	l.cl.conns[lc] = struct{}{}
	l.cl.mu.Unlock()
	return lc, nil
}

// Close closes the listener and ends an Accept that waits for a slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn is a connection of a connLimiter; closing it frees its
// slot.
type limitedConn struct {
	net.Conn
	cl    *connLimiter
	state http.ConnState // guarded by cl.mu
	since time.Time      // when it came to state; guarded by cl.mu
	once  sync.Once
}

// Close closes the connection and frees its slot.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.cl.mu.Lock()
		delete(c.cl.conns, c)
		c.cl.mu.Unlock()
		<-c.cl.slots
	})
	return err
}
