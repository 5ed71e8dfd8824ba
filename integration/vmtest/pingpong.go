package vmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Pingpong says how to run rdma-core's ibv_rc_pingpong: a server on one
// device, a client on the other, exchanging Iters messages of Size bytes
// over an RC queue pair. The zero value runs rxe0 against rxe1 with GID 0,
// which crosses the veth pair with plain routing (GID 1, the IPv4 address,
// would need policy routing since both ends live in one network
// namespace).
type Pingpong struct {
	Server, Client string // devices; default Dev0 and Dev1
	GID            int    // GID index on both sides
	Iters          int    // default 1000
	Size           int    // default 4096
	Port           int    // TCP port for the exchange of QP numbers; default 18515
	Timeout        time.Duration
}

// PingpongResult holds both sides' output.
type PingpongResult struct {
	Server, Client []byte
	Bytes          int64   // bytes the client reports moved
	Mbps           float64 // the client's throughput
}

var ppRate = regexp.MustCompile(`(\d+) bytes in [0-9.]+ seconds = ([0-9.]+) Mbit/sec`)

// Run runs the server, waits until it listens, runs the client and waits
// for both. The error includes both sides' output.
func (p Pingpong) Run(ctx context.Context) (*PingpongResult, error) {
	if p.Server == "" {
		p.Server = Dev0
	}
	if p.Client == "" {
		p.Client = Dev1
	}
	if p.Iters == 0 {
		p.Iters = 1000
	}
	if p.Size == 0 {
		p.Size = 4096
	}
	if p.Port == 0 {
		p.Port = 18515
	}
	if p.Timeout == 0 {
		p.Timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	common := []string{"-g", strconv.Itoa(p.GID), "-n", strconv.Itoa(p.Iters), "-s", strconv.Itoa(p.Size), "-p", strconv.Itoa(p.Port)}

	var res PingpongResult
	var srvOut, cliOut bytes.Buffer
	srv := exec.CommandContext(ctx, "ibv_rc_pingpong", append([]string{"-d", p.Server}, common...)...)
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start the ibv_rc_pingpong server: %w", err)
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Wait() }()
	fail := func(err error) (*PingpongResult, error) {
		cancel()
		<-srvDone
		return nil, fmt.Errorf("%w\nserver (%s) output:\n%s\nclient (%s) output:\n%s", err, p.Server, srvOut.Bytes(), p.Client, cliOut.Bytes())
	}
	if err := waitListen(ctx, p.Port, srvDone); err != nil {
		return fail(fmt.Errorf("the ibv_rc_pingpong server did not listen on port %d: %w", p.Port, err))
	}
	cli := exec.CommandContext(ctx, "ibv_rc_pingpong", append(append([]string{"-d", p.Client}, common...), Addr0)...)
	cli.Stdout, cli.Stderr = &cliOut, &cliOut
	if err := cli.Run(); err != nil {
		return fail(fmt.Errorf("ibv_rc_pingpong client: %w", err))
	}
	if err := <-srvDone; err != nil {
		return nil, fmt.Errorf("ibv_rc_pingpong server: %w\nserver output:\n%s\nclient output:\n%s", err, srvOut.Bytes(), cliOut.Bytes())
	}
	res.Server, res.Client = srvOut.Bytes(), cliOut.Bytes()
	if m := ppRate.FindSubmatch(res.Client); m != nil {
		res.Bytes, _ = strconv.ParseInt(string(m[1]), 10, 64)
		res.Mbps, _ = strconv.ParseFloat(string(m[2]), 64)
	}
	return &res, nil
}

// waitListen waits until a TCP socket listens on port, or srvDone fires.
func waitListen(ctx context.Context, port int, srvDone chan error) error {
	want := fmt.Sprintf(":%04X ", port)
	for {
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			b, _ := os.ReadFile(f)
			for _, line := range strings.Split(string(b), "\n") {
				fields := strings.Fields(line)
				// local_address rem_address st: st 0A is LISTEN
				if len(fields) > 3 && strings.HasSuffix(fields[1]+" ", want) && fields[3] == "0A" {
					return nil
				}
			}
		}
		select {
		case err := <-srvDone:
			srvDone <- err
			if err == nil {
				err = errors.New("it exited")
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
