package verbs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/netip"
	"strings"
	"testing"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
)

// cmParser is parseUcmatose or parseUdaddy.
type cmParser func(args []string, stdout, stderr io.Writer) (*cmOpts, error)

// checkCmParse checks that parse takes args as want.
func checkCmParse(t *testing.T, parse cmParser, args []string, want cmOpts) {
	t.Helper()
	var out, errb bytes.Buffer
	o, err := parse(args, &out, &errb)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	if *o != want {
		t.Errorf("%q: got %+v, want %+v", args, *o, want)
	}
}

// checkCmUsage checks that each of bad exits 1 with tool's usage, which
// has has, on standard output; -h writes nothing to standard error.
func checkCmUsage(t *testing.T, parse cmParser, tool, has string, bad ...[]string) {
	t.Helper()
	for _, args := range bad {
		var out, errb bytes.Buffer
		_, err := parse(args, &out, &errb)
		var ee cli.ExitError
		if !errors.As(err, &ee) || ee.Code != 1 || !strings.HasPrefix(out.String(), "usage: "+tool+"\n") ||
			!strings.Contains(out.String(), has) {
			t.Errorf("%v: %v, stdout %q", args, err, out.String())
		}
		if args[0] == "-h" && errb.Len() != 0 {
			t.Errorf("-h wrote to stderr: %q", errb.String())
		}
	}
}

// The exit status is the low byte of the return status, as main's return
// gives it.
func TestCmExit(t *testing.T) {
	for ret, code := range map[int]int{-1: 255, -2: 254, 28: 28, -110: 146, 256: 1} {
		var ee cli.ExitError
		if err := cmExit(ret); !errors.As(err, &ee) || ee.Code != code {
			t.Errorf("cmExit(%d) = %v, want exit %d", ret, err, code)
		}
	}
	if err := cmExit(0); err != nil {
		t.Errorf("cmExit(0) = %v", err)
	}
}

func TestCmResolve(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		host, port string
		want       string
	}{
		{"", "7471", "0.0.0.0:7471"},
		{"10.77.0.1", "7471", "10.77.0.1:7471"},
		{"::ffff:10.77.0.1", "1", "10.77.0.1:1"},
		{"fe80::1%lo", "7174", "[fe80::1%lo]:7174"},
		{"127.0.0.1", "0", "127.0.0.1:0"},
	} {
		got, err := cmResolve(ctx, c.host, c.port)
		if err != nil || got != netip.MustParseAddrPort(c.want) {
			t.Errorf("cmResolve(%q, %q) = %v, %v; want %s", c.host, c.port, got, err, c.want)
		}
	}
	if _, err := cmResolve(ctx, "10.0.0.1", "no-such-service-here"); err == nil {
		t.Error("an unknown service resolved")
	}
	var out bytes.Buffer
	o := &cmOpts{dst: "10.0.0.1", haveDst: true, src: "10.0.0.2", port: "99999"}
	if _, _, ret := cmAddrs(ctx, o, &out); ret != -2 || !strings.HasPrefix(out.String(), "rdma_getaddrinfo error: ") {
		t.Errorf("port 99999: %d %q", ret, out.String())
	}
	o.port = "7471"
	if src, dst, ret := cmAddrs(ctx, o, &out); ret != 0 || src != netip.MustParseAddrPort("10.0.0.2:0") ||
		dst != netip.MustParseAddrPort("10.0.0.1:7471") {
		t.Errorf("client: %v %v %d", src, dst, ret)
	}
}
