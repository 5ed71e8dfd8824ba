package exporter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serveHTTP serves the exporter c, with rdma_exporter_build_info, on
// o.listen until ctx is done.
func serveHTTP(ctx context.Context, c prometheus.Collector, o *options, log *slog.Logger, stdout io.Writer) error {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{c, versioncollector.NewCollector("rdma_exporter")} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	mux := http.NewServeMux()
	mux.Handle(o.path, promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}))
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	fmt.Fprintf(stdout, "rdma_exporter: serving http://%s%s\n", ln.Addr(), o.path)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
