package exporter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/mdlayher/vsock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
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
	errLog := slog.NewLogLogger(log.Handler(), slog.LevelError)
	servers := make([]*http.Server, len(lns))
	errc := make(chan error, len(lns))
	for i, ln := range lns {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errLog}
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
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
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
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// newHTTPHandler returns the exporter's HTTP handler: reg's series at
// path, at most maxRequests scrapes at once (more are answered 503),
// counted by promhttp's promhttp_metric_handler_requests_total and
// _requests_in_flight, and a landing page linking it at / (unless path
// is /).
func newHTTPHandler(reg *prometheus.Registry, path string, maxRequests int, log *slog.Logger) (*router, error) {
	r := &router{path: path, metrics: promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(log.Handler(), slog.LevelError),
		MaxRequestsInFlight: maxRequests,
		Registry:            reg, // promhttp_metric_handler_errors_total
	}))}
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
// (which answers 404 but for /). The paths are compared as they are, not
// as http.ServeMux patterns.
type router struct {
	path             string
	metrics, landing http.Handler
}

// ServeHTTP implements http.Handler.
func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == rt.path:
		rt.metrics.ServeHTTP(w, r)
	case rt.landing != nil:
		rt.landing.ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

// listen opens the listeners exporter-toolkit's flags name: systemd's
// socket-activated ones with --web.systemd-socket, else one for each
// --web.listen-address (TCP, or vsock for vsock://:PORT), as
// web.ListenAndServe would; Main opens them itself to say where it
// serves (the port the kernel picked, for :0).
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
