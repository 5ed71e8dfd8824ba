package main

// exporter: `purerdma exporter` runs rdma_exporter (cmd/rdma_exporter, the
// Prometheus exporter) in this process's place, with the same arguments,
// as git runs git-foo for `git foo`.
//
// The exporter is a binary of its own so that the tools do not link
// client_golang. Linked in, its packages' init (the default registry with
// the Go and process collectors, procfs, protobuf, net/http) and an
// executable of 17.6 MB against 6.3 MB cost every tool run: `purerdma
// version` took 4.2-4.3 ms on the host against 2.3-2.6 ms without it
// (GODEBUG=inittrace=1: 1.96 ms of init against 0.49 ms), which was most
// of ibstat's time on one CA and more under TCG (issue 11).

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
)

// exporterName is the exporter's executable.
const exporterName = "rdma_exporter"

func runExporter(args []string, stdout, stderr io.Writer) error {
	dir := ""
	if self, err := os.Executable(); err == nil {
		dir = filepath.Dir(self)
	}
	path, err := exporterPath(dir)
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		// Said here, without the exec: `purerdma help exporter` captures
		// it, and the exporter's flags are its own -h's to list.
		fmt.Fprintln(stderr, "Usage: purerdma exporter [FLAG]...")
		fmt.Fprintln(stderr, "Runs rdma_exporter, the Prometheus exporter, with these flags, in this process's place;")
		fmt.Fprintln(stderr, "`rdma_exporter -h` lists them (--web.listen-address :9915, --config.flows FILE, ...).")
		if err != nil {
			fmt.Fprintln(stderr, err)
		} else {
			fmt.Fprintln(stderr, "rdma_exporter here:", path)
		}
		return nil
	}
	if err != nil {
		fmt.Fprintln(stderr, "purerdma exporter:", err)
		return cli.ExitError{Code: 1}
	}
	// Exec, not a child: the exporter keeps this process id, so a service
	// manager's signals and the container's PID 1 reach it.
	err = syscall.Exec(path, append([]string{exporterName}, args...), os.Environ())
	fmt.Fprintf(stderr, "purerdma exporter: exec %s: %v\n", path, err)
	return cli.ExitError{Code: 1}
}

// exporterPath finds rdma_exporter: first in dir (purerdma's own
// directory, where `go install ./cmd/...` puts both), then
// on PATH.
func exporterPath(dir string) (string, error) {
	if dir != "" {
		p := filepath.Join(dir, exporterName)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(exporterName)
	if err == nil {
		return p, nil
	}
	if errors.Is(err, exec.ErrDot) {
		// A relative PATH entry found it: run it only by an explicit path.
		return "", fmt.Errorf("%s was found through a relative PATH entry (%v); run it by its path", exporterName, err)
	}
	return "", fmt.Errorf("%s is neither next to purerdma nor on PATH: install it with `go install github.com/purerdma/rdma/cmd/rdma_exporter@latest` (it is the same exporter, a binary of its own so that the tools do not carry it)", exporterName)
}
