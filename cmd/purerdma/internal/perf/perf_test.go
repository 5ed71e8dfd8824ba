package perf

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
)

// The key messages as perftest 4.5's binaries send them (captured with
// strace on rxe: ib_write_bw's, with a GID, and without).
const (
	keyGID   = "0000:0001:000011:d231b2:0000022e:00007f48b9507000:fe:80:00:00:00:00:00:00:50:54:00:ff:fe:12:34:02:00000000:\x00"
	keyNoGID = "0001:0001:000011:d231b2:0000022e:00007f48b9507000:00000000\x00"
)

func TestKeyMessages(t *testing.T) {
	d := dest{lid: 0, outReads: 1, qpn: 0x11, psn: 0xd231b2, rkey: 0x22e, vaddr: 0x7f48b9507000,
		gid: rdma.GID{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x02}}
	if got := string(d.wire(true)); got != keyGID || len(got) != keyMsgSizeGID {
		t.Errorf("wire(GID) = %q (%d bytes), want %q (%d)", got, len(got), keyGID, keyMsgSizeGID)
	}
	back, err := parseDest([]byte(keyGID), true)
	if err != nil || back != d {
		t.Errorf("parseDest(GID) = %+v, %v; want %+v", back, err, d)
	}
	d.lid, d.gid = 1, rdma.GID{}
	if got := string(d.wire(false)); got != keyNoGID || len(got) != keyMsgSize {
		t.Errorf("wire = %q (%d bytes), want %q (%d)", got, len(got), keyNoGID, keyMsgSize)
	}
	back, err = parseDest([]byte(keyNoGID), false)
	if err != nil || back != d {
		t.Errorf("parseDest = %+v, %v; want %+v", back, err, d)
	}
	cm := d.wireCM(3)
	if len(cm) != keyMsgSizeCM {
		t.Fatalf("wireCM: %d bytes, want %d", len(cm), keyMsgSizeCM)
	}
	if back, err := parseDestCM(cm); err != nil || back != d {
		t.Errorf("parseDestCM = %+v, %v; want %+v", back, err, d)
	}
	for _, bad := range []string{"", "0000:zz:000011", strings.Repeat(":", 30)} {
		if _, err := parseDest([]byte(bad), true); err == nil {
			t.Errorf("parseDest(%q) took it", bad)
		}
	}
}

func FuzzParseDest(f *testing.F) {
	f.Add([]byte(keyGID), true)
	f.Add([]byte(keyNoGID), false)
	f.Fuzz(func(t *testing.T, b []byte, gid bool) {
		d, err := parseDest(b, gid)
		if err != nil {
			return
		}
		// What parses, written again, parses to the same.
		again, err := parseDest(d.wire(gid), gid)
		if err != nil || again != d {
			t.Errorf("%q: %+v, then %+v, %v", b, d, again, err)
		}
		parseDestCM(b)
	})
}

func TestCHex(t *testing.T) {
	for _, c := range []struct {
		v     uint64
		width int
		want  string
	}{{0, 4, "0000"}, {0, 6, "000000"}, {0x11, 6, "0x0011"}, {0xb7bff, 6, "0xb7bff"}, {0x5488, 6, "0x5488"},
		{0x80, 4, "0x80"}, {0x22e, 8, "0x00022e"}, {0x7f48b9507000, 16, "0x007f48b9507000"}} {
		if got := cHex(c.v, c.width); got != c.want {
			t.Errorf("cHex(%#x, %d) = %q, want %q", c.v, c.width, got, c.want)
		}
	}
}

func TestBWReport(t *testing.T) {
	p := &params{size: 65536, iters: 4, numQPs: 1, cqMod: 1}
	// Posts at 0, 10, 20, 30 µs; completions at 20, 30, 40, 60 µs.
	tp := []int64{0, 10000, 20000, 30000}
	tc := []int64{20000, 30000, 40000, 60000}
	r := p.bwReportOf(tp, tc)
	// 4 × 64 KiB in 60 µs: 4166.67 MiB/s; the best run is posts 0 to 2
	// completed by 40 µs, 13.333 µs a message (in whole nanoseconds, as
	// perftest divides cycles): 4687.62 MiB/s.
	if r.iters != 4 || r.size != 65536 {
		t.Errorf("size %d iters %d", r.size, r.iters)
	}
	var b bytes.Buffer
	p.printBW(&b, r)
	if want := " 65536      4                4687.62            4166.67\t\t   0.066667\n"; b.String() != want {
		t.Errorf("row %q, want %q", b.String(), want)
	}
	p.noPeak = true
	b.Reset()
	p.printBW(&b, p.bwReportOf([]int64{0}, []int64{60000}))
	if want := " 65536      4                0.00               4166.67\t\t   0.066667\n"; b.String() != want {
		t.Errorf("no-peak row %q, want %q", b.String(), want)
	}
	p.reportGbs = true
	b.Reset()
	p.printBW(&b, bwReport{size: 2, iters: 5, bwPeak: 0.01, bwAvg: 0.005, msgRate: 0.3})
	if want := " 2          5           0.010000            0.005000            0.300000\n"; b.String() != want {
		t.Errorf("extended row %q, want %q", b.String(), want)
	}
}

func TestLatReport(t *testing.T) {
	p := &params{size: 2, iters: 8, verb: verbWrite, tst: testLat}
	// Differences of 2, 4, 6, 8, 10, 12, 100 µs: the two largest (12 and
	// 100) are left out; round trips halved.
	var tp []int64
	var at int64
	for _, d := range []int64{0, 2, 4, 6, 8, 10, 12, 100} {
		at += d * 1000
		tp = append(tp, at)
	}
	var b bytes.Buffer
	p.printLat(&b, tp)
	want := " 2       8          1.00           6.00         3.00     \t       3.00        \t1.41   \t\t6.00    \t\t6.00   \n"
	if b.String() != want {
		t.Errorf("row\n%q, want\n%q", b.String(), want)
	}
}

func TestLatReportOverflow(t *testing.T) {
	// perftest squares each deviation into an int: past INT_MAX it turns
	// INT_MIN, the sum goes negative, and t_stdev prints -nan.
	p := &params{size: 4194304, iters: 8, verb: verbSend, tst: testLat}
	var tp []int64
	var at int64
	for _, d := range []int64{0, 10, 200000, 200000, 200000, 200000, 200000, 200000} { // µs, two-way
		at += d * 1000
		tp = append(tp, at)
	}
	var b bytes.Buffer
	p.printLat(&b, tp)
	if !strings.Contains(b.String(), "\t-nan   \t\t") {
		t.Errorf("row %q: want t_stdev -nan", b.String())
	}
}

func TestLatDurationReport(t *testing.T) {
	// print_report_lat_duration: 1,000 round trips in a 2 s sample.
	p := &params{size: 2, iters: 1000, verb: verbWrite, tst: testLat, duration: 2}
	var b bytes.Buffer
	p.printLatReport(&b, []int64{0, 2e9})
	if want := " 2             1000            1000.00        500.00 \n"; b.String() != want {
		t.Errorf("row %q, want %q", b.String(), want)
	}
}

func TestParse(t *testing.T) {
	var out, errb bytes.Buffer
	p, err := parse("ib_write_bw", verbWrite, testBW, []string{"-n", "200", "-x", "0", "host"}, &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	if p.txDepth != 128 || p.cqMod != 1 || p.size != 65536 || p.server != "host" || !p.gidUser {
		t.Errorf("ib_write_bw -n 200: %+v", p)
	}
	p, _ = parse("ib_write_bw", verbWrite, testBW, []string{"-n", "100", "-a"}, &out, &errb)
	if p.txDepth != 100 || p.cqMod != 100 || p.size != maxSize {
		t.Errorf("ib_write_bw -n 100 -a: tx %d cq_mod %d size %d", p.txDepth, p.cqMod, p.size)
	}
	p, _ = parse("ib_send_bw", verbSend, testBW, []string{"-n", "5"}, &out, &errb)
	if p.rxDepth != 6 || !p.noPeak {
		t.Errorf("ib_send_bw -n 5 server: rx %d noPeak %v", p.rxDepth, p.noPeak)
	}
	p, _ = parse("ib_send_bw", verbSend, testBW, []string{"-D", "8", "h"}, &out, &errb)
	if p.txDepth != 128 || p.rxDepth != 512 || p.iters != 0 || !p.noPeak || p.margin != 2 {
		t.Errorf("ib_send_bw -D 8: tx %d rx %d iters %d noPeak %v margin %d", p.txDepth, p.rxDepth, p.iters, p.noPeak, p.margin)
	}
	out.Reset()
	errb.Reset()
	if err := run("ib_send_lat", verbSend, testLat, []string{"-D", "2", "-a"}, &out, &errb); !isExit(err, 1) ||
		out.String() != resultLine || errb.String() != "Duration mode currently doesn't support running on all sizes.\n" {
		t.Errorf("-D -a: %v, %q, %q", err, out.String(), errb.String())
	}
	out.Reset()
	if err := run("ib_atomic_bw", verbAtomic, testBW, []string{"-a"}, &out, &errb); !isExit(err, 1) ||
		out.String() != resultLine+"Message size cannot be changed for Atomic tests \n" {
		t.Errorf("ib_atomic_bw -a: %v, %q", err, out.String())
	}
	errb.Reset()
	if err := run("ib_write_bw", verbWrite, testBW, []string{"-e"}, &out, &errb); !isExit(err, 1) ||
		errb.String() != " Events feature not available on WRITE verb\n Parser function exited with Error\n" {
		t.Errorf("ib_write_bw -e: %v, %q", err, errb.String())
	}
	out.Reset()
	if err := run("ib_read_lat", verbRead, testLat, []string{"-V"}, &out, &errb); !isExit(err, 1) || out.String() != "Version: 6.06\n" {
		t.Errorf("-V: %v, %q", err, out.String())
	}
}

func isExit(err error, code int) bool {
	var ee cli.ExitError
	return errors.As(err, &ee) && ee.Code == code
}

func TestAtof(t *testing.T) {
	for s, want := range map[string]float64{"6.06": 6.06, "5.70x": 5.70, "": 0, "abc": 0, "3": 3} {
		if got := atof(s); got != want {
			t.Errorf("atof(%q) = %v, want %v", s, got, want)
		}
	}
}
