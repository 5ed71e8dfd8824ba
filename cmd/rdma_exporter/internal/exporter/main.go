package exporter

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/purerdma/rdma/umad"
)

// Main runs the exporter with command-line args (without the program
// name), in the Prometheus exporters' conventions:
//
//	--web.listen-address=:9915      where to serve
//	--web.telemetry-path=/metrics   the metrics path
//	--path.sysfs=/sys               sysfs mount point
//	--config.flows=FILE             flows to count (JSON, see FlowConfig)
//	--[no-]collector.SOURCE         each source of Sources, on by default
//	--collector.fabric              the fabric mode (FabricConfig), off by
//	                                default; --fabric.ca, --fabric.port
//
// It serves until SIGINT or SIGTERM, then destroys its flows. It returns
// the exit status: 0 after a clean stop, 2 for a bad flag or config, 1 when
// it cannot start.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdma_exporter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("web.listen-address", ":9915", "address to serve the metrics on")
	path := fs.String("web.telemetry-path", "/metrics", "path of the metrics")
	sysfsRoot := fs.String("path.sysfs", "/sys", "sysfs mount point")
	flowsFile := fs.String("config.flows", "", "file listing the flows to count (JSON array of {name, device, port, dst_mac, src_mac, ethertype, vlan, src_ip, dst_ip, proto, src_port, dst_port})")
	fabric := fs.Bool("collector.fabric", false, "fabric mode: discover the fabric from one port and read every port's PMA counters over it, with infiniband_exporter's metric names (needs an InfiniBand port with an SMI; PURERDMA_IBSIM=SOCKET:NODE for an ibsim fabric)")
	fabricCA := fs.String("fabric.ca", "", "fabric mode: the local device (default: as libibumad chooses)")
	fabricPort := fs.Int("fabric.port", 0, "fabric mode: the local port (default: as libibumad chooses)")
	on, off := map[string]*bool{}, map[string]*bool{}
	for _, s := range Sources {
		on[s] = fs.Bool("collector."+s, true, "collect "+s)
		off[s] = fs.Bool("no-collector."+s, false, "do not collect "+s)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rdma_exporter: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	cfg := Config{SysfsRoot: *sysfsRoot, Off: map[string]bool{}, Logger: log}
	for _, s := range Sources {
		cfg.Off[s] = !*on[s] || *off[s]
	}
	if *fabric {
		ca, port := *fabricCA, *fabricPort
		cfg.Fabric = &FabricConfig{Open: func() (*umad.Port, error) { return openFabricPort(ca, port) }}
	}
	if *flowsFile != "" {
		f, err := os.Open(*flowsFile)
		if err != nil {
			fmt.Fprintf(stderr, "rdma_exporter: %v\n", err)
			return 2
		}
		cfg.Flows, err = ReadFlows(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "rdma_exporter: %v\n", err)
			return 2
		}
	}
	e, err := New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "rdma_exporter: %v\n", err)
		var ce *ConfigError
		if errors.As(err, &ce) {
			return 2
		}
		return 1
	}
	defer e.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	mux := http.NewServeMux()
	mux.Handle(*path, promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "rdma_exporter: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	log.Info("serving", "address", ln.Addr().String(), "path", *path, "flows", len(cfg.Flows))
	fmt.Fprintf(stdout, "rdma_exporter: serving http://%s%s\n", ln.Addr(), *path)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "rdma_exporter: %v\n", err)
		return 1
	}
	return 0
}
