package diags

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/internal/testmodel/ibsimtest"
	"github.com/purerdma/rdma/umad"
)

// saRunGo is runGo for saquery without the environment variable, so that
// the fabrics' tests run in parallel.
func saRunGo(t *testing.T, f *ibsimtest.Fabric, node string, args ...string) fabricRun {
	t.Helper()
	env := DefaultEnv()
	env.IBSim = f.Sock + ":" + node
	var out, errb bytes.Buffer
	err := env.run(append([]string{"purerdma", "saquery"}, args...), &out, &errb)
	r := fabricRun{stdout: out.String(), stderr: errb.String()}
	var ee cli.ExitError
	if errors.As(err, &ee) {
		r.code = ee.Code
	} else if err != nil {
		t.Fatalf("saquery: %v", err)
	}
	return r
}

// saActCount masks the SM's activity count, which moves with every sweep.
var saActCount = regexp.MustCompile(`ActCount\.+[0-9]+`)

// saRecordSizes are the sizes of the records that saquery dumps in blocks,
// by the block's first line (AttributeOffset × 8, as OpenSM answers).
var saRecordSizes = map[string]int{
	"NodeRecord dump:": 112, "PathRecord dump:": 64, "PortInfoRecord dump:": 72, "LinkRecord dump:": 8,
	"SMInfoRecord dump:": 32, "MCMember Record dump:": 56, "MCMemberRecord group dump:": 56,
	"MCMemberRecord member dump:": 56, "SL2VLTableRecord dump:": 16, "VLArbTableRecord dump:": 72,
	"PKeyTableRecord dump:": 72, "LFT Record dump:": 72, "MFT Record dump:": 72, "GUIDInfo Record dump:": 72,
	"SwitchInfoRecord dump:": 24, "InformInfoRecord dump:": 64, "ServiceRecord dump:": 176,
}

// maskSA masks what infiniband-diags' saquery cannot show the same twice
// under libumad2sim: the SM's activity count, which moves with every
// sweep, and the records that reach past byte 224 of the answer. Those
// are heap garbage in C: libumad2sim's receiver (umad2sim.c, __receiver)
// reads each packet into a buffer of sizeof(struct sim_request), 288
// bytes, of which the umad header takes 64, so umad2sim_read copies only
// the first 224 bytes of the MAD while the length it reports is 64 + 256,
// and read() then copies 320 bytes out of the 288-byte buffer. A block
// whose record ends past byte 224 (56 bytes of headers, then records of
// the block's size) is replaced by its header line, in both outputs, so
// the records' count is still compared.
func maskSA(s string) string {
	s = saActCount.ReplaceAllString(s, "ActCount..N")
	var out []string
	idx := map[string]int{}
	skip := false
	for _, line := range strings.SplitAfter(s, "\n") {
		h := strings.TrimSpace(line)
		if size, ok := saRecordSizes[h]; ok {
			i := idx[h]
			idx[h]++
			skip = 56+(i+1)*size > 224
			if skip {
				out = append(out, h+" (past byte 224: masked)\n")
				continue
			}
		} else if !strings.HasPrefix(line, "\t") {
			skip = false
		}
		if !skip {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}

// saCases are saquery's command lines for a fabric: every query type and
// option, with the LIDs of a CA (ca) and a switch (sw), and a node name
// saquery can resolve (named: under ibsim only the first NodeRecord
// comes back, see maskSA).
func saCases(lids map[string]int, named, ca, sw string) [][]string {
	cl, sl, nl := strconv.Itoa(lids[ca]), strconv.Itoa(lids[sw]), strconv.Itoa(lids[named])
	return [][]string{
		{}, {"-N"}, {"NR"}, {"NodeRecord", cl}, {"nr", named}, {named}, {cl}, {"nr", ca}, {"-N", named}, {"-N", "nosuchnode"},
		{"-L", named}, {"-l", named}, {"-G", named}, {"-L", ca}, {"-O", nl}, {"-O", cl}, {"-U", "0x0"}, {"-D"}, {"--list"},
		{"-p"}, {"PR"}, {"--src-to-dst", named + ":" + sl}, {"--src-to-dst", cl + ":" + sw}, {"--src-to-dst", cl + ":" + sl},
		{"-p", "--slid", cl, "--dlid", sl}, {"-p", "--dlid", sl, "--sl", "0", "-n", "1", "-r", "1"},
		{"-p", "--dlid", sl, "--pkey", "0xffff", "-M", "4", "-R", "3"}, {"-p", "--dlid", "999"},
		{"-p", "--service_id", "0x1234", "-T", "0", "-F", "0", "-H", "0", "-Q", "0", "--pkt_lifetime", "0"},
		{"--sgid-to-dgid", "fe80::1-fe80::2"},
		{"PIR"}, {"PIR", cl}, {"PIR", sl + "/1"}, {"PIR", sl + "//0"}, {"-K", "PIR", cl + "/1"}, {"PortInfoRecord", "/1"},
		{"-x"}, {"LR"}, {"LR", sl}, {"LR", sl + "/1"}, {"LR", "", cl}, {"-x", cl + "/1", sl}, {"-x", "--", sl},
		{"SMIR"}, {"SMInfoRecord", sl}, {"-s"}, {"-c"}, {"CPI"}, {"--smkey", "0x1", "-c"}, {"SWIR"}, {"SWIR", sl},
		{"-g"}, {"-m"}, {"-m", "0xc000"}, {"MCMR"}, {"MCMR", "--mlid", "0xc000"}, {"MCMR", "--mgid", "ff12:401b:ffff::1"},
		{"MCMR", "-q", "0x1", "--scope", "2", "-J", "1", "-X", "1", "--sl", "0"},
		{"SL2VL"}, {"SL2VL", sl + "/1/2"}, {"VLAR", sl}, {"VLAR", cl + "/1/1"}, {"PKTR"}, {"PKTR", sl + "/1/0"},
		{"LFTR"}, {"LFTR", sl + "/0"}, {"MFTR"}, {"MFTR", sl + "/0/0"}, {"GIR"}, {"GIR", cl + "/0"},
		{"-S"}, {"SR"}, {"-I"}, {"IIR"}, {"IIR", "fe80::1"}, {"IIR", "bogus"},
		{"PIR", "0"}, {"PIR", "nosuchnode"}, {"--smkey", "1", "NR", cl}, {"-t", "500", "NR", cl},
		{"-d", "NR", cl}, {"-e", "-v", "NR", cl}, {"-C", "ibsim0", "-P", "1", "NR", cl}, {"-C", "bogus", "NR"},
		{"-P", "7", "NR"}, {"-P", "-1", "-c"}, {"-N", cl},
		// Command lines saquery refuses: its usage on stderr, status 2
		// (255 for a bad timeout, IBEXIT). (--smkey x is left out: C's
		// getpass would prompt on the terminal of whoever runs the test.)
		{"-h"}, {"-L"}, {"-O"}, {"-O", "0"}, {"-U"}, {"--bogus"}, {"-Z"}, {"-t"}, {"--smkey"},
		{"--src-to-dst", "nocolon"}, {"--sgid-to-dgid", "fe80::1"}, {"--sgid", "zz"}, {"-t", "0"}, {"-t", "12x"},
		{"--p"}, {"--s"}, {"--li"},
	}
}

// TestFabricSAQuery runs saquery, infiniband-diags' and ours, on the
// project's simulated fabrics (Small, Ring, Line, Wide), with every
// query type and option, and compares stdout, stderr and the exit status.
// Under ibsim an SA answer is its first MAD (libumad2sim passes OpenSM's
// RMPP message cut to 256 bytes, see umad's sa.go), so both tools show
// the records that fit in it.
// saJoin makes node's port, through umad.SAClient, a full member of the
// IPoIB broadcast group of the default partition (an SA Set of an
// MCMemberRecord: MGID, PortGID, JoinState) and a subscriber to trap 64
// (a Set of InformInfo); it returns the port's GID.
func saJoin(t *testing.T, f *ibsimtest.Fabric, node string) string {
	t.Helper()
	p, err := umad.OpenSimPort(f.Sock, node)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	n, err := p.SimNode()
	if err != nil {
		t.Fatal(err)
	}
	c, err := umad.NewSAClient(p, binary.BigEndian.Uint16(n.PortInfo[18:20]), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The port's GUID, as the SA knows it: its NodeRecord by its LID.
	q := make([]byte, umad.NodeRecordSize)
	copy(q[0:2], n.PortInfo[16:18])
	recs, err := c.GetTable(umad.SAAttrNodeRecord, umad.NRCompLID, q)
	var nr umad.NodeRecord
	if err != nil || len(recs) != 1 || nr.Decode(recs[0]) != nil {
		t.Fatalf("%s: its NodeRecord: %v (%d records)", node, err, len(recs))
	}
	mc := make([]byte, 56)
	mgid := netip.MustParseAddr("ff12:401b:ffff::ffff:ffff").As16()
	copy(mc[0:16], mgid[:])
	binary.BigEndian.PutUint64(mc[16:24], 0xfe80000000000000)
	binary.BigEndian.PutUint64(mc[24:32], nr.NodeInfo.PortGUID)
	mc[48] = 1 // JoinState: full member
	ii := make([]byte, 36)
	binary.BigEndian.PutUint16(ii[16:18], 0xffff) // LIDRangeBegin: all
	ii[22], ii[23] = 1, 1                         // IsGeneric, Subscribe
	binary.BigEndian.PutUint16(ii[24:26], 0xffff) // Type: all
	binary.BigEndian.PutUint16(ii[26:28], 64)     // TrapNumber: GID in service
	binary.BigEndian.PutUint32(ii[28:32], 1<<8|18)
	for _, q := range []umad.SAQuery{
		{Method: umad.MethodSet, Attr: umad.SAAttrMCMemberRecord, CompMask: umad.MCRCompMGID | umad.MCRCompPortGID | umad.MCRCompJoinState, Data: mc},
		{Method: umad.MethodSet, Attr: 0x0003, Data: ii}, // InformInfo
	} {
		r, err := c.Query(q)
		if err != nil {
			t.Fatalf("%s: Set of attribute %#x: %v", node, uint16(q.Attr), err)
		}
		if r.Header.Status != 0 {
			t.Fatalf("%s: Set of attribute %#x: status %#x", node, uint16(q.Attr), uint16(r.Header.Status))
		}
	}
	a := netip.AddrFrom16([16]byte(mc[16:32]))
	return a.String()
}

// dropExplanation drops from our standard error the lines of our
// explanation of a failure ("saquery: ..." lines of their own after C's
// message) that C's does not have.
func dropExplanation(ours, c string) string {
	var lines []string
	for _, l := range strings.SplitAfter(ours, "\n") {
		if !strings.HasPrefix(l, "saquery: ") || strings.Contains(c, l) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "")
}

var saFirstGUID = regexp.MustCompile(`node_guid\.+(0x[0-9a-f]+)\n`)

var saFirstNR = regexp.MustCompile(`NodeDescription\.+(\S+)\n`)

func TestFabricSAQuery(t *testing.T) {
	for _, tc := range []struct {
		name, net, node, ca, sw string
	}{
		{"small", ibsimtest.Small, "Hca1", "Hca2", "Switch2"},
		{"ring", ibsimtest.Ring, "h1", "Dual", "Ring4"},
		{"line", ibsimtest.Line, "Tail", "Mid", "Line9"},
		{"wide", ibsimtest.Wide, "w3", "e1", "Edge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := ibsimtest.Start(t, tc.net, ibsimtest.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			lids, err := f.LIDs(ctx, tc.node)
			if err != nil {
				t.Fatal(err)
			}
			// A name saquery resolves (get_lid) must be in the first
			// NodeRecord of the answer, the only one under ibsim.
			first := saFirstNR.FindStringSubmatch(runC(t, f, tc.node, "saquery").stdout)
			if first == nil {
				t.Fatal("saquery shows no NodeRecord")
			}
			cases := saCases(lids, first[1], tc.ca, tc.sw)
			// Members for the IPoIB broadcast group and a subscription,
			// set through our SA client, so that MCMemberRecords,
			// MFTRecords and InformInfoRecords have something to show.
			joined := map[string]bool{}
			for _, node := range []string{tc.node, tc.ca, first[1]} {
				if !joined[node] {
					joined[node] = true
					cases = append(cases, []string{"IIR", saJoin(t, f, node)})
				}
			}
			cases = append(cases, []string{"--smkey", "1", "-m"}, []string{"--smkey", "1", "-m", "0xc000"},
				[]string{"--smkey", "1", "MCMR"}, []string{"--smkey", "1", "MCMR", "--mlid", "0xc000", "-J", "1"},
				[]string{"-K", "IIR"}, []string{"-K", "--smkey", "1", "IIR"}, []string{"MFTR", "--smkey", "1"})
			// The node name map: the first node's GUID named, a file
			// that does not parse, one that is not there.
			dir := t.TempDir()
			guid := saFirstGUID.FindStringSubmatch(runC(t, f, tc.node, "saquery").stdout)
			if guid == nil {
				t.Fatal("saquery shows no node GUID")
			}
			good, bad := filepath.Join(dir, "map"), filepath.Join(dir, "bad")
			if err := os.WriteFile(good, []byte("# map\n"+guid[1]+" \"renamed node\" # the first\n0x1 other\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(bad, []byte("0x12 fine\nnot-a-guid name\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// -z: a config file (ibdiag.conf's format) giving the SM_Key
			// and the timeout, and one that is not there.
			conf := filepath.Join(dir, "ibdiag.conf")
			if err := os.WriteFile(conf, []byte("# test\nsa_key=1\ntimeout=700\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cases = append(cases, []string{"-z", conf, "-m"}, []string{"--config", filepath.Join(dir, "none"), "-m"})
			for _, m := range []string{good, bad, filepath.Join(dir, "none")} {
				cases = append(cases, []string{"--node-name-map", m}, []string{"--node-name-map", m, "-D"},
					[]string{"--node-name-map", m, "-N", "renamed node"}, []string{"--node-name-map", m, "--smkey", "1", "-m"})
			}
			for _, args := range cases {
				name := "saquery " + strings.Join(args, " ")
				c, g := runC(t, f, tc.node, "saquery", args...), saRunGo(t, f, tc.node, args...)
				g.stderr = dropExplanation(g.stderr, c.stderr)
				sameRun(t, name, c, g, maskSA)
			}
		})
	}
}
