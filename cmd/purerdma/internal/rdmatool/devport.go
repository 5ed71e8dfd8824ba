package rdmatool

import (
	"fmt"
	"io"
	"strings"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/rdmanl"
)

// devPort finds the DEV[/PORT] argument of rdma's link and statistic
// commands among devs, as iproute2's rd_exec_link (rdma/utils.c) does, and
// returns the device's name and the port (0: every port of DEV). ok is
// false where rdma says "Wrong device name": an unknown device, or a port
// past the device's last.
//
// With strict (rdma link show) PORT is a decimal port from 1 on and may
// not be left out. Without (rdma statistic) DEV alone means every port,
// and PORT is what C's atoi reads from text that starts with a digit
// ("mock0/x" is a wrong device name, as rdma says in the VM tests).
func devPort(devs []rdmanl.Device, arg string, strict bool) (name string, port uint32, ok bool) {
	name, p, slash := strings.Cut(arg, "/")
	n := int64(0)
	switch {
	case strict:
		n = -1
		if v, err := parseDecimal(p); err == nil && v >= 1 {
			n = v
		}
	case slash:
		if n = cli.Atoi(p); p == "" || p[0] < '0' || p[0] > '9' {
			n = -1
		}
	}
	for _, d := range devs {
		if d.Name == name && n >= 0 && n <= int64(d.NumPorts) {
			return name, uint32(n), true
		}
	}
	return "", 0, false
}

// parseDecimal is a port number in decimal digits only, below 2^32.
func parseDecimal(s string) (int64, error) {
	if s == "" || len(s) > 10 {
		return 0, fmt.Errorf("not a port number: %q", s)
	}
	var v int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("not a port number: %q", s)
		}
		v = v*10 + int64(s[i]-'0')
	}
	if v >= 1<<32 {
		return 0, fmt.Errorf("not a port number: %q", s)
	}
	return v, nil
}

// wrongDevice is rdma's answer to a DEV[/PORT] it cannot find: "[]" for
// JSON, "Wrong device name" on stderr, exit status 1.
func wrongDevice(asJSON bool, stdout, stderr io.Writer) error {
	if asJSON {
		fmt.Fprintln(stdout, "[]")
	}
	fmt.Fprintln(stderr, "Wrong device name")
	return cli.ExitError{Code: 1}
}
