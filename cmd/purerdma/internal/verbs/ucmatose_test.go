package verbs

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/rdmacm"
)

func TestUcmatoseFlags(t *testing.T) {
	checkCmParse(t, parseUcmatose, nil, cmOpts{ps: rdmacm.PortSpaceTCP, conns: 1, count: 10, size: 100, port: "7471"})
	checkCmParse(t, parseUcmatose, []string{"-s", "10.77.0.1", "-b10.77.0.2", "-c", "10", "-C5", "-S", "4096",
		"-p", "7000", "-P", "ib", "-t", "0x20", "-a", "14", "-m", "--timeout", "1m", "extra"},
		cmOpts{dst: "10.77.0.1", haveDst: true, src: "10.77.0.2", ps: rdmacm.PortSpaceIB, conns: 10, count: 5,
			size: 4096, port: "7000", setTOS: true, tos: 0x20, migrate: true, setTimeout: true, ackTimeout: 14, timeout: time.Minute})
	var out, errb bytes.Buffer
	// getopt groups a flag without an argument with the next; atoi reads
	// the leading digits.
	o, err := parseUcmatose([]string{"-mc3x", "-C", "abc", "-PTCP"}, &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	if !o.migrate || o.conns != 3 || o.count != 0 || o.ps != rdmacm.PortSpaceTCP {
		t.Errorf("-mc3x -C abc -PTCP: %+v", *o)
	}
	errb.Reset()
	if o, err = parseUcmatose([]string{"-P", "udp", "-f", "ip"}, &out, &errb); err != nil || o.ps != rdmacm.PortSpaceTCP ||
		!strings.Contains(errb.String(), "Warning: unknown port space format") {
		t.Errorf("-P udp: %v %+v %q", err, o, errb.String())
	}
	checkCmUsage(t, parseUcmatose, "ucmatose", "[-P port_space]\n\t    tcp or ib\n",
		[]string{"-x"}, []string{"-c"}, []string{"-h"}, []string{"-f", "gid"}, []string{"--timeout", "soon"})
}
