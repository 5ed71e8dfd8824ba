package verbs

import (
	"bytes"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

func TestRpingFill(t *testing.T) {
	buf := make([]byte, 64)
	start := rpingFill(buf, 0, 65)
	want := "rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr"
	if got := string(cstr(buf)); got != want || buf[63] != 0 || len(cstr(buf)) != 63 {
		t.Errorf("ping 0:\n got %q\nwant %q", got, want)
	}
	if start != 66 {
		t.Errorf("next start %d, want 66", start)
	}
	// The run wraps from 'z' to 'A', and so does the start.
	start = rpingFill(buf, 12345, 120)
	if got := string(cstr(buf)); !strings.HasPrefix(got, "rdma-ping-12345: xyzABC") {
		t.Errorf("ping 12345: %q", got)
	}
	if start != 121 {
		t.Errorf("next start %d", start)
	}
	if s := rpingFill(buf, 1, 122); s != 65 {
		t.Errorf("start after 122 is %d, want 65", s)
	}
	// The minimum size holds the longest positive number and the NUL; a
	// longer message is cut as snprintf cuts it.
	small := make([]byte, rpingMinBufSize)
	rpingFill(small, 2147483647, 65)
	if got := string(cstr(small)); got != "rdma-ping-2147483647: " {
		t.Errorf("minimum size: %q", got)
	}
	rpingFill(small, -2147483648, 65)
	if got := string(cstr(small)); got != "rdma-ping--2147483648:" {
		t.Errorf("minimum size, cut: %q", got)
	}
	// The C tool's sequence over several pings, start by start.
	start = 65
	for i := int32(0); i < 60; i++ {
		wantStart := byte(65 + i%58)
		b := make([]byte, 40)
		if s := rpingFill(b, i, start); b[len("rdma-ping-")+len(strconv.Itoa(int(i)))+2] != wantStart {
			t.Fatalf("ping %d starts its run with %q, want %q", i, b[len("rdma-ping-")+len(strconv.Itoa(int(i)))+2], wantStart)
		} else {
			start = s
		}
	}
}

func TestCatoi(t *testing.T) {
	for s, want := range map[string]int32{"7174": 7174, "  12x": 12, "-5": -5, "+3": 3, "x": 0, "": 0, "\t9": 9} {
		if got := catoi(s); got != want {
			t.Errorf("catoi(%q) = %d, want %d", s, got, want)
		}
	}
}

func parseRping(t *testing.T, args ...string) (*rpingOpts, int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	o, code := parseRpingArgs(args, &out, &errb)
	return o, code, out.String(), errb.String()
}

func TestRpingArgs(t *testing.T) {
	o, code, _, _ := parseRping(t, "-s")
	if code != 0 || o.server != 1 || o.addr != netip.IPv4Unspecified() || o.port != 7174 || o.size != 64 || o.count != 0 || o.src.IsValid() {
		t.Fatalf("defaults: %+v %d", o, code)
	}
	o, code, _, _ = parseRping(t, "-c", "-a", "10.77.0.1", "-I10.77.0.2", "-p", "7999", "-C1000", "-S", "100", "-vV", "-v")
	if code != 0 || o.server != 0 || o.addr != netip.MustParseAddr("10.77.0.1") || o.src != netip.MustParseAddr("10.77.0.2") ||
		o.port != 7999 || o.count != 1000 || o.size != 100 || o.verbose != 2 || o.validate != 1 {
		t.Fatalf("client: %+v %d", o, code)
	}
	// IPv6 with a zone, the port truncated to 16 bits as htobe16(atoi()),
	// operands ignored and options after them taken (GNU getopt).
	o, code, _, _ = parseRping(t, "operand", "-s", "-a", "fe80::1%veth0", "-p", "65537", "-P")
	if code != 0 || o.addr != netip.MustParseAddr("fe80::1%veth0") || o.port != 1 || !o.persistent {
		t.Fatalf("v6: %+v %d", o, code)
	}
	// -- ends the options.
	if _, code, _, _ := parseRping(t, "--", "-s"); code != 22 {
		t.Errorf("-- -s: %d, want 22 (neither -s nor -c)", code)
	}
	// -d prints the options after it.
	_, _, out, _ := parseRping(t, "-d", "-c", "-p", "1", "-C", "2", "-S", "30", "-v", "-V")
	if want := "client\nport 1\ncount 2\nsize 30\nverbose\nvalidate data\n"; out != want {
		t.Errorf("-d printed %q, want %q", out, want)
	}
}

func TestRpingArgErrors(t *testing.T) {
	env := DefaultEnv()
	for _, c := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{nil, 22, "rping -s [-vVd] [-S size] [-C count] [-a addr] [-p port]\n", ""},
		{[]string{"-s", "-x"}, 22, "\t-q\t\tuse self-created", ""},
		{[]string{"-s", "-t", "1"}, 22, "rping -c [-vVd]", ""},
		{[]string{"-s", "-p"}, 22, "rping -s", ""},
		{[]string{"-h"}, 22, "Usage:\nrping -s", ""},
		{[]string{"-s", "-S", "22"}, 22, "", "Invalid size 22 (valid range is 23 to 65536)\n"},
		{[]string{"-s", "-S", "65536"}, 22, "", "Invalid size 65536 (valid range is 23 to 65536)\n"},
		{[]string{"-s", "-C", "-1"}, 22, "", "Invalid count -1\n"},
		{[]string{"-s", "-a", "no.such.host.invalid"}, 254, "getaddrinfo failed (Name or service not known) - invalid hostname or IP address\n", ""},
	} {
		_, code, out, errs := parseRping(t, c.args...)
		if code != c.code || !strings.Contains(out, c.stdout) || !strings.Contains(errs, c.stderr) || (c.stderr == "" && errs != "") {
			t.Errorf("%q: exit %d stdout %q stderr %q; want %d, %q, %q", c.args, code, out, errs, c.code, c.stdout, c.stderr)
		}
	}
	// The boundaries are accepted.
	for _, s := range []string{"23", "65535"} {
		if o, code, _, _ := parseRping(t, "-s", "-S", s); code != 0 || o.size != int(catoi(s)) {
			t.Errorf("-S %s: %d", s, code)
		}
	}
	// Through the tool: the status is the C tool's.
	if _, _, code := env.runTool("rping"); code != 22 {
		t.Errorf("rping without -s or -c: exit %d, want 22", code)
	}
}
