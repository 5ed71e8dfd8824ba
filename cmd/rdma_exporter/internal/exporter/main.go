package exporter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/purerdma/rdma/umad"
)

// Main runs the exporter with command-line args (without the program
// name), in the Prometheus exporters' conventions (kingpin flags, as
// node_exporter has them):
//
//	--web.listen-address=:9915      where to serve (repeatable; vsock://:PORT too)
//	--web.systemd-socket            serve systemd's socket-activated listeners instead
//	--web.config.file=FILE          TLS and basic auth (exporter-toolkit's web config)
//	--web.telemetry-path=/metrics   the metrics path; / is a landing page linking it
//	--web.max-requests=40           scrapes answered at once; one more waits up to
//	                                5 s for a slot, then is answered 503
//	--web.max-connections=64        connections open at once (see connLimiter)
//	--path.sysfs=/sys               sysfs mount point
//	--config.flows=FILE             flows to count (JSON, see FlowConfig); a regular
//	                                file: a FIFO or a device is refused, not read
//	--[no-]collector.SOURCE         each source of Sources, on by default
//	--collector.fabric              the fabric mode (FabricConfig), off by
//	                                default; --fabric.ca, --fabric.port
//	--log.level=info, --log.format=logfmt
//	--version, -h/--help            print to stdout and exit 0
//
// Besides the exporter's series the metrics path has
// rdma_exporter_build_info, the Go runtime's go_* and the process's
// process_* series, and promhttp_metric_handler_*; scrapes that come at
// once share one gather (collapsingGatherer). The server's timeouts and
// bounds are serveHTTP's (docs/exporter.md, "HTTP"). It serves until SIGINT
// or SIGTERM, then destroys its flows. It writes the usage, the version and
// one line per address served to stdout, and errors and the log to stderr.
// It returns the exit status: 0 after a clean stop (and for --version and
// --help), 2 for a bad flag or config (one line on stderr), 1 when it
// cannot start or serve.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, stdout, stderr)
}

// run is Main until ctx is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code, done := parseFlags(args, stdout, stderr)
	if done {
		return code
	}
	o.log.Writer = stderr
	log := promslog.New(&o.log)
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "rdma_exporter: %s\n", oneLine(err.Error()))
		return code
	}
	if o.maxRequests < 0 || o.maxConns < 0 {
		return fail(2, errors.New("--web.max-requests and --web.max-connections cannot be negative (0: no limit)"))
	}
	if !strings.HasPrefix(o.path, "/") {
		return fail(2, fmt.Errorf("--web.telemetry-path %q does not start with /", o.path))
	}
	if f := *o.web.WebConfigFile; f != "" {
		if err := regularFile(f); err != nil {
			return fail(2, fmt.Errorf("--web.config.file %s: %w", f, err))
		}
		if err := web.Validate(f); err != nil {
			return fail(2, fmt.Errorf("--web.config.file %s: %w", f, err))
		}
	}
	cfg := o.config(log)
	if o.flowsFile != "" {
		var err error
		if cfg.Flows, err = readFlowsFile(o.flowsFile); err != nil {
			return fail(2, err)
		}
	}
	e, err := New(cfg)
	if err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			return fail(2, err)
		}
		return fail(1, err)
	}
	defer e.Close()
	log.Info("starting rdma_exporter", "version", version.Info(), "build_context", version.BuildContext(),
		"path", o.path, "flows", len(cfg.Flows), "max_requests", o.maxRequests, "max_connections", o.maxConns)
	if err := serveHTTP(ctx, e, o, log, stdout); err != nil {
		return fail(1, err)
	}
	return 0
}

// config is the exporter's Config that the flags say, flows aside.
func (o *options) config(log *slog.Logger) Config {
	cfg := Config{SysfsRoot: o.sysfsRoot, Off: map[string]bool{}, Logger: log, MaxOpenFiles: o.maxOpenFiles}
	if o.maxOpenFiles <= 0 {
		cfg.MaxOpenFiles = -1 // none held
	}
	for _, s := range Sources {
		cfg.Off[s] = !*o.on[s]
	}
	if o.fabric {
		ca, port := o.fabricCA, o.fabricPort
		cfg.Fabric = &FabricConfig{Open: func(ctx context.Context) (*umad.Port, error) { return openFabricPort(ctx, ca, port) }}
	}
	return cfg
}

// options are Main's flags.
type options struct {
	web          *web.FlagConfig
	path         string
	maxRequests  int
	maxConns     int
	sysfsRoot    string
	maxOpenFiles int
	flowsFile    string
	on           map[string]*bool
	fabric       bool
	fabricCA     string
	fabricPort   int
	log          promslog.Config
}

// terminated is what parseFlags's kingpin application panics with where
// kingpin would exit (--help, --version): the status to return.
type terminated int

// parseFlags parses args with a kingpin application of its own (no
// global state, so that Main can run more than once in a process). done
// says Main is to return code: after --help or --version, or a bad flag
// (one line on stderr, status 2).
func parseFlags(args []string, stdout, stderr io.Writer) (o *options, code int, done bool) {
	setVersion()
	o = &options{on: map[string]*bool{}}
	app := kingpin.New("rdma_exporter", "Prometheus exporter for the RDMA devices of a host: port counters (node_exporter's infiniband names), hw_counters, RDMA netlink statistics, counted flows, and the fabric's ports in fabric mode.")
	app.UsageWriter(stdout).ErrorWriter(stderr).Terminate(func(code int) { panic(terminated(code)) })
	app.HelpFlag.Short('h')
	app.Version(version.Print("rdma_exporter"))
	o.web = kingpinflag.AddFlags(app, ":9915")
	app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&o.path)
	app.Flag("web.max-requests", fmt.Sprintf("Maximum number of scrapes answered at once; one more waits up to %v for one to end, then is answered 503. 0: no limit.", maxRequestsWait)).Default("40").IntVar(&o.maxRequests)
	app.Flag("web.max-connections", "Maximum number of connections open at once; at the limit the one idle the longest is closed, else new ones wait. 0: no limit.").Default("64").IntVar(&o.maxConns)
	app.Flag("path.sysfs", "sysfs mount point.").Default("/sys").StringVar(&o.sysfsRoot)
	app.Flag("sysfs.max-open-files", "Counter files of sysfs kept open between scrapes (read with one pread each); the others are opened, read and closed on each scrape. 0: none.").Default(strconv.Itoa(DefaultMaxOpenFiles)).IntVar(&o.maxOpenFiles)
	app.Flag("config.flows", "File listing the flows to count (JSON array of {name, device, port, dst_mac, src_mac, ethertype, vlan, src_ip, dst_ip, proto, src_port, dst_port}).").PlaceHolder("FILE").StringVar(&o.flowsFile)
	for _, s := range Sources {
		o.on[s] = app.Flag("collector."+s, "Collect "+s+" (--no-collector."+s+" turns it off).").Default("true").Bool()
	}
	app.Flag("collector.fabric", "Fabric mode: discover the fabric from one port and read every port's PMA counters over it, with infiniband_exporter's metric names (needs an InfiniBand port with an SMI; PURERDMA_IBSIM=SOCKET:NODE for an ibsim fabric).").BoolVar(&o.fabric)
	app.Flag("fabric.ca", "Fabric mode: the local device (default: as libibumad chooses).").PlaceHolder("CA").StringVar(&o.fabricCA)
	app.Flag("fabric.port", "Fabric mode: the local port (default: as libibumad chooses).").Default("0").IntVar(&o.fabricPort)
	promslogflag.AddFlags(app, &o.log)

	code, done, err := parse(app, args)
	if done {
		return nil, code, true
	}
	if err != nil {
		app.Errorf("%s", oneLine(err.Error()))
		return nil, 2, true
	}
	return o, 0, false
}

// parse runs app.Parse, turning a terminated panic back into a status.
func parse(app *kingpin.Application, args []string) (code int, done bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, ok := r.(terminated)
			if !ok {
				panic(r)
			}
			code, done = int(t), true
		}
	}()
	_, err = app.Parse(args)
	return 0, false, err
}

// setVersion gives version.Version, when the linker did not set it, the
// module version the binary was built from ("(devel)" in a working
// tree), as `purerdma version` says it.
var setVersion = sync.OnceFunc(func() {
	if version.Version != "" {
		return
	}
	version.Version = "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version.Version = bi.Main.Version
	}
})

// readFlowsFile reads --config.flows. Only a regular file is read: it is
// looked at before it is opened, and opened without blocking, so that a
// FIFO or a device named by mistake is refused at start instead of
// hanging it.
func readFlowsFile(name string) ([]FlowConfig, error) {
	if err := regularFile(name); err != nil {
		return nil, &ConfigError{Msg: fmt.Sprintf("--config.flows %s: %v", name, err)}
	}
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The name may have been replaced between the two looks.
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, &ConfigError{Msg: fmt.Sprintf("--config.flows %s: changed while opened; not a regular file", name)}
	}
	return ReadFlows(f)
}

// regularFile says why name is not a regular file (following links), or
// returns nil when it is.
func regularFile(name string) error {
	st, err := os.Stat(name)
	if err != nil {
		return err
	}
	m := st.Mode()
	var what string
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	default:
		what = "of mode " + m.Type().String()
	}
	return fmt.Errorf("%s, not a regular file", what)
}

// oneLine joins a message's lines with "; ", so that an error is one
// line.
func oneLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "; ")
}
