package diags

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
)

// TestFabricToolArgs: the fabric tools' usage errors and help, and the
// destination and field helpers, without a fabric.
func TestFabricToolArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		help string
	}{
		{[]string{"smpquery"}, 2, ""}, {[]string{"smpquery", "nodeinfo"}, 2, ""}, {[]string{"smpquery", "-y"}, 2, ""},
		// -h and --help: the usage on standard error, exit status 2, as
		// ibdiag_show_usage.
		{[]string{"smpquery", "-h"}, 2, "GUIDInfo"}, {[]string{"sminfo", "-s"}, 2, ""}, {[]string{"sminfo", "--help"}, 2, "<sm_lid|sm_dr_path>"},
		{[]string{"ibnetdiscover", "--bogus"}, 2, ""}, {[]string{"ibnetdiscover", "--outstanding"}, 2, ""},
		{[]string{"ibnetdiscover", "-h"}, 2, "--outstanding_smps"}, {[]string{"iblinkinfo", "-t"}, 2, ""}, {[]string{"iblinkinfo", "-h"}, 2, "iblinkinfo"},
		{[]string{"ibstat", "-h"}, 2, "list_of_cas"}, {[]string{"ibstat", "--help"}, 2, "list_of_cas"},
		// --retries is smpquery's and sminfo's (libibmad's RPC), not the
		// discovery tools' (C's tables have none).
		{[]string{"ibnetdiscover", "--retries", "1"}, 2, ""}, {[]string{"smpquery", "-e", "-d", "--retries", "x", "ni", "1"}, 2, ""},
	} {
		var out, errb bytes.Buffer
		err := DefaultEnv().run(append([]string{"purerdma"}, c.args...), &out, &errb)
		var ee cli.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.Code
		} else if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if code != c.code || !strings.Contains(errb.String(), c.help) || out.Len() != 0 {
			t.Errorf("%v: exit %d (want %d)\nstdout %s\nstderr %s", c.args, code, c.code, out.String(), errb.String())
		}
	}
	for _, c := range []struct {
		in   string
		dr   bool
		want string
	}{{"4", false, "Lid 4"}, {"0x10", false, "Lid 16"}, {"0", true, "DR path slid 65535; dlid 65535; 0"}, {"0,1,3", true, "DR path slid 65535; dlid 65535; 0,1,3"}} {
		d, err := parseSMPDest(c.in, c.dr)
		if err != nil || d.String() != c.want {
			t.Errorf("%q: %v %v", c.in, d, err)
		}
	}
	for _, bad := range []struct {
		in string
		dr bool
	}{{"0", false}, {"x", false}, {"70000", false}, {"1,2", true}, {"0,300", true}, {"0," + strings.Repeat("1,", 63) + "1", true}} {
		if _, err := parseSMPDest(bad.in, bad.dr); err == nil {
			t.Errorf("%q accepted", bad.in)
		}
	}
	if bits([]byte{0xab, 0xcd}, 4, 8) != 0xbc || bits([]byte{1}, 4, 8) != 0 {
		t.Error("bits")
	}
	if fieldLine("McastPkeyTrapSuppressionEnabled", "0") != "McastPkeyTrapSuppressionEnabled:.0" || fieldLine("Lid", "3") != "Lid:.............................3" {
		t.Error(fieldLine("Lid", "3"))
	}
	if dumpLinkWidthSup(31, 8) != "1X or 4X or 8X or 12X or 2X" || dumpLinkWidthSup(2, 8) != "4X (IBA extension)" || dumpLinkSpeeds(0, 4) != "undefined (0) (IBA extension)" {
		t.Errorf("%q %q %q", dumpLinkWidthSup(31, 8), dumpLinkWidthSup(2, 8), dumpLinkSpeeds(0, 4))
	}
	if capList(0xc048, capNames) != "0xc048\n\t\t\t\tIsTrapSupported\n\t\t\t\tIsSLMappingSupported\n\t\t\t\tIsExtendedSpeedsSupported\n\t\t\t\tIsCapabilityMask2Supported" {
		t.Error(capList(0xc048, capNames))
	}
}
