package diags

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/sysfs"
	"github.com/purerdma/rdma/umad"
)

func TestPerfqueryDump(t *testing.T) {
	pc := umad.PortCounters{PortSelect: 1, CounterSelect: 0xffff, CounterSelect2: 0xff, PortXmitData: 123456, PortRcvPkts: 42, QP1Dropped: 7}
	var b strings.Builder
	for _, f := range perfqueryFields(&pc) {
		b.WriteString(f.String() + "\n")
	}
	// libibmad's format: the name, a colon, dots to column 33, the value.
	for _, want := range []string{
		"PortSelect:......................1\n",
		"CounterSelect:...................0xffff\n",
		"CounterSelect2:..................0xff\n",
		"ExcessiveBufferOverrunErrors:....0\nQP1Dropped:......................7\nVL15Dropped:.....................0\n",
		"PortXmitData:....................123456\n",
		"PortRcvPkts:.....................42\nPortXmitWait:....................0\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
	ext := umad.PortCountersExtended{PortSelect: 2, PortXmitData: 1 << 40, PortMulticastRcvPkts: 5, CounterSelect2: 1, QP1Dropped: 3}
	names := func(fs []perfqueryField) string {
		var n []string
		for _, f := range fs {
			n = append(n, f.name)
		}
		return strings.Join(n, " ")
	}
	if got := names(perfqueryExtFields(&ext, 0, 0)); got != "PortSelect CounterSelect PortXmitData PortRcvData PortXmitPkts PortRcvPkts" {
		t.Errorf("no extended width: %s", got)
	}
	all := perfqueryExtFields(&ext, umad.PMCapExtendedWidth, umad.PMCap2AdditionalPortCountersExtended)
	if len(all) != 25 || all[9].String() != "PortMulticastRcvPkts:............5" || all[10].String() != "CounterSelect2:..................0x00000001" ||
		all[24].String() != "QP1Dropped:......................3" {
		t.Errorf("%s", names(all))
	}
}

func TestPerfqueryArgs(t *testing.T) {
	o, err := perfqueryParse([]string{"-x", "-C", "mlx5_0", "-P", "2", "-t", "50", "--retries=1", "--dgid", "fe80::1", "0x12", "3"}, io.Discard)
	if err != nil || !o.extended || o.ca != "mlx5_0" || o.port != 2 || o.timeout != 50*time.Millisecond || o.retries != 1 ||
		o.dgid != "fe80::1" || o.lid != 0x12 || o.dport != 3 {
		t.Fatalf("%+v %v", o, err)
	}
	for _, bad := range [][]string{{"-t", "0"}, {"-P"}, {"-y"}, {"-t", "-5"}, {"--dgid", "::1", "x"}} {
		if _, err := perfqueryParse(bad, io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// A LID resolve_portid_str refuses is refused once the port is
	// open (IBEXIT); operands past the third are not looked at.
	for _, c := range []struct {
		args []string
		bad  string
	}{{[]string{"70000"}, "70000"}, {[]string{"x"}, "x"}, {[]string{"0xc000"}, "0xc000"}, {[]string{"1", "2", "3", "4"}, ""}} {
		if o, err := perfqueryParse(c.args, io.Discard); err != nil || o.badDest != c.bad {
			t.Errorf("%q: %+v %v", c.args, o, err)
		}
	}
	if o, err := perfqueryParse([]string{"-R", "-a", "5", "1", "0xf000"}, io.Discard); err != nil || !o.resetOnly || !o.all || o.dport != 1 || o.mask != 0xf000 || !o.maskSet {
		t.Fatalf("%+v %v", o, err)
	}
	if o, err := perfqueryParse([]string{"-a", "-r", "5"}, io.Discard); err != nil || o.dport != perfqueryAllPorts || !o.reset {
		t.Fatalf("%+v %v", o, err)
	}
	// C's strtoul: a port or mask that does not parse is 0; lists and
	// ranges of ports; a range upside down is refused later (IBEXIT).
	if o, err := perfqueryParse([]string{"5", "x", "y"}, io.Discard); err != nil || o.dport != 0 || o.mask != 0 || !o.maskSet {
		t.Fatalf("%+v %v", o, err)
	}
	if o, err := perfqueryParse([]string{"-l", "5", "2,4,,6"}, io.Discard); err != nil || !slices.Equal(o.ports, []int{2, 4, 6}) || o.dport != 2 || !o.loop {
		t.Fatalf("%+v %v", o, err)
	}
	if o, err := perfqueryParse([]string{"-a", "5", "3-6"}, io.Discard); err != nil || !slices.Equal(o.ports, []int{3, 4, 5, 6}) || o.dport != 3 {
		t.Fatalf("%+v %v", o, err)
	}
	if o, err := perfqueryParse([]string{"5", "6-3"}, io.Discard); err != nil || !o.rangeBad {
		t.Fatalf("%+v %v", o, err)
	}
	// Every group has its option; -D is --xmtdisc here, not --Direct.
	if o, err := perfqueryParse([]string{"-D", "--vlxmittimecc", "-c", "5"}, io.Discard); err != nil || !o.smplctl ||
		o.groups != 1<<2|1<<(len(pmGroups)-1) {
		t.Fatalf("%+v %v", o, err)
	}
	if _, err := perfqueryParse([]string{"--Direct", "5"}, io.Discard); err == nil {
		t.Fatal("--Direct accepted")
	}
	var out, errb bytes.Buffer
	var ee cli.ExitError
	if err := DefaultEnv().run([]string{"purerdma", "perfquery", "--bogus"}, &out, &errb); !errors.As(err, &ee) || ee.Code != 2 {
		t.Fatal(err)
	}
	// -h: ibdiag_show_usage's standard error and exit status 2.
	out.Reset()
	errb.Reset()
	if err := DefaultEnv().run([]string{"purerdma", "perfquery", "-h"}, &out, &errb); !errors.As(err, &ee) || ee.Code != 2 ||
		out.Len() != 0 || !strings.Contains(errb.String(), "show extended port counters") {
		t.Fatalf("-h: %v\nstdout %s", err, out.String())
	}
	if o, err := perfqueryParse([]string{"-e", "-d", "--retries", "5"}, io.Discard); err != nil || !o.errs || !o.debug || o.retries != 5 {
		t.Fatalf("%+v %v", o, err)
	}
	// Options of ours join only when named in full: --d is C's --debug,
	// not ambiguous with --dgid.
	if o, err := perfqueryParse([]string{"--d", "--json"}, io.Discard); err != nil || !o.debug || !o.json {
		t.Fatalf("%+v %v", o, err)
	}
	if _, err := perfqueryParse([]string{"--dg", "::1"}, io.Discard); err == nil {
		t.Fatal("--dg accepted")
	}
	if o, _ := perfqueryParse(nil, io.Discard); o.retries+1 != madDefTries || o.timeout != madDefTimeout {
		t.Fatalf("defaults: %d tries of %v, want libibmad's %d of %v", o.retries+1, o.timeout, madDefTries, madDefTimeout)
	}
	local := &umad.CAPort{Port: sysfs.Port{CA: "rxe0", Number: 1, LinkLayer: rdma.LinkLayerEthernet}, GIDPrefix: 0xfe80 << 48, PortGUID: 0x0201}
	tgt, err := perfqueryResolve(&perfqueryOpts{lid: -1}, local)
	if err != nil || !tgt.grh || tgt.display != "Lid 0 Gid fe80::201" || tgt.port != 1 {
		t.Fatalf("%+v %v", tgt, err)
	}
	if _, err := perfqueryResolve(&perfqueryOpts{lid: 3}, local); err == nil || !strings.Contains(err.Error(), "--dgid") {
		t.Fatal(err)
	}
	lid9 := uint32(9)
	ib := &umad.CAPort{Port: sysfs.Port{CA: "mlx5_0", Number: 1, LinkLayer: rdma.LinkLayerInfiniBand, LID: &lid9}}
	// The local port: resolve_self's port number wins (-a's 255 too).
	if tgt, err := perfqueryResolve(&perfqueryOpts{lid: -1, dport: perfqueryAllPorts}, ib); err != nil || tgt.grh || tgt.lid != 9 || tgt.port != 1 || tgt.display != "Lid 9" {
		t.Fatalf("%+v %v", tgt, err)
	}
	// A LID without a port: PortSelect 0, as perfquery sends it.
	if tgt, err := perfqueryResolve(&perfqueryOpts{lid: 9}, ib); err != nil || tgt.port != 0 {
		t.Fatalf("%+v %v", tgt, err)
	}
}

func TestUmadToolArgs(t *testing.T) {
	o, err := umadToolParse("umad send", []string{"--class", "0x31", "--oui=0x0002c9", "--method", "2", "-c", "5", "--dgid", "fe80::1", "-t", "10", "--data", "hi"}, io.Discard)
	if err != nil || o.class != 0x31 || o.oui != 0x0002c9 || o.method != 2 || o.count != 5 || o.timeout != 10*time.Millisecond || o.data != "hi" {
		t.Fatalf("%+v %v", o, err)
	}
	for _, bad := range [][]string{{"--class", "0x20"}, {"--oui", "0"}, {"--method", "0x80"}, {"--data", strings.Repeat("x", 217)}, {"--what"}, {"-t", "0"}} {
		if _, err := umadToolParse("umad send", bad, io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var out, errb bytes.Buffer
	var ee cli.ExitError
	if err := DefaultEnv().run([]string{"purerdma", "umad"}, &out, &errb); !errors.As(err, &ee) || ee.Code != 2 {
		t.Fatal(err)
	}
	if umadTextData([]byte("pong\x00junk")) != `"pong"` || umadTextData([]byte{1, 'a'}) != `"\x01a"` {
		t.Fatal(umadTextData([]byte{1, 'a'}))
	}
}

// TestPerfqueryGroupDump checks the counter groups' dumps: every group's
// names cover its attribute's counters (umad.PerfCounterSetLayout), the
// 2-bit flow control update errors come out one per VL, and libibmad's
// buffer cuts a dump where it ends.
func TestPerfqueryGroupDump(t *testing.T) {
	for _, g := range pmGroups {
		n, _, ok := umad.PerfCounterSetLayout(g.attr)
		if g.attr == umad.PMAttrPortExtendedSpeedsCounters {
			continue
		}
		if !ok || len(g.counterNames()) != n {
			t.Errorf("%s: %d names for %d counters", g.name, len(g.counterNames()), n)
		}
	}
	data := make([]byte, umad.PerfDataSize)
	data[1], data[3] = 7, 0x0f
	data[4], data[5] = 0b11100100, 0b00000001 // VL0 3, VL1 2, VL2 1, VL3 0, ..., VL7 1
	g := pmGroups[slices.IndexFunc(pmGroups[:], func(g pmGroup) bool { return g.long == "vlxmitflowctlerrors" })]
	lines, err := g.dump(data)
	if err != nil {
		t.Fatal(err)
	}
	got := pmGroupDump(g.name, "Lid 3", 7, lines)
	for _, want := range []string{
		"# PortVLXmitFlowCtlUpdateErrors counters: Lid 3 port 7\nPortSelect:......................7\nCounterSelect:...................0x000f\n",
		"PortVLXmitFlowCtlUpdateErrors0:..3\nPortVLXmitFlowCtlUpdateErrors1:..2\nPortVLXmitFlowCtlUpdateErrors2:..1\nPortVLXmitFlowCtlUpdateErrors3:..0\n",
		"PortVLXmitFlowCtlUpdateErrors7:..1\n", "PortVLXmitFlowCtlUpdateErrors15:.0\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	// _dump_fields: a line while more than 33 bytes are left, the last
	// one cut to what is left.
	l40 := strings.Repeat("x", 40)
	if got := cDump([]string{l40, l40, l40}, 100); got != l40+"\n"+l40+"\n" {
		t.Errorf("100 bytes: %q", got)
	}
	if got := cDump([]string{l40, l40, l40}, 75); got != l40+"\n"+l40[:32]+"\n" {
		t.Errorf("75 bytes: %q", got)
	}
	// PortExtendedSpeedsCounters with every counter at its maximum
	// does not fit perfquery's 1536 bytes.
	// PortSamplesControl: mad_dump_hex's widths by the field's bytes.
	lines, err = psControlLines(bytes.Repeat([]byte{0xff}, umad.PerfDataSize))
	if err != nil {
		t.Fatal(err)
	}
	got = cDump(lines, 1280)
	for _, want := range []string{
		"OpCode:..........................0xff\nPortSelect:......................255\n", "CounterMask0:....................0x07\n",
		"CounterMasks1to9:................0x07ffffff\nCounterMasks10to14:..............0x7fff\n", "SampleStatus:....................3\n",
		"CounterSelect14:.................0xffff\nSamplesOnlyOptionMask:...........0xffffffffffffffff\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	lines, err = pescLines(bytes.Repeat([]byte{0xff}, umad.PerfDataSize), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := cDump(lines, 1536); len(got) >= 1536 ||
		strings.Contains(got, "FECUncorrectableBlockCtrLane11") || !strings.HasPrefix(got, "PortSelect:......................255\nCounterSelect:...................0xffffffffffffffff\n") {
		t.Errorf("%d bytes:\n%s", len(got), got)
	}
}

// BenchmarkPerfqueryParse is perfquery's command-line parse, which every
// run pays before it opens the port: its allocations (-benchmem) are
// what docs/performance.md's "Per tool" counts by size class.
func BenchmarkPerfqueryParse(b *testing.B) {
	b.ReportAllocs()
	args := []string{"-C", "rxe0", "-P", "1"}
	for b.Loop() {
		o, err := perfqueryParse(args, io.Discard)
		if err != nil || o.ca != "rxe0" || o.port != 1 {
			b.Fatalf("perfqueryParse = %+v, %v", o, err)
		}
	}
}
