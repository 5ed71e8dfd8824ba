package diags

import (
	"os/exec"
	"strings"
	"testing"
)

// TestHostsAwkRules checks ibhosts' and ibswitches' rules (hostsCaLine,
// hostsSwitchLine) against awk running the same rules as rdma-core's
// scripts write them, on lines with and without '#', "port 0", "base
// port 0" and "enhanced port 0".
func TestHostsAwkRules(t *testing.T) {
	if _, err := exec.LookPath("awk"); err != nil {
		t.Skip("no awk on PATH to compare with")
	}
	lines := []string{
		`Switch	36 "S-0008f10400411a08"		# "MF0;switch-a:ISR9024/U1" base port 0 lid 2 lmc 0`,
		`Switch	36 "S-0008f10400411a08"		#"desc with enhanced port 0 x" enhanced port 0 lid 2 lmc 0`,
		`Switch	36 "S-0008f10400411a08"		no hash here port 0 lid 3`,
		`Switch	36 "S-0008f10400411a08"	# 	"port 0 first" base port 0 lid 2`,
		`Switch	36 "S-1"	#  "x"`,
		`Switch	36 "S-1"	# port 0 lid 1`,
		`Ca	2 "H-0002c9030001e3f2"		# "node  #1 a"`,
		`Ca	2 "H-0002c9030001e3f2"`,
	}
	prog := `/^Ca/ { print $1 "\t: 0x" substr($3, 4, 16) " ports " $2 " " substr($0, match($0, "#[ \t]*")+RLENGTH) }
/^Switch/ { desc = substr($0, match($0, "#[ \t]*")+RLENGTH); pi = match(desc, "port 0.*"); pinfo = substr(desc, pi); desc = substr(desc, 1, pi-2); type = "base port 0"; ti = match(desc, type); if (ti == 0) { type = "enhanced port 0"; ti = match(desc, type); }; if (ti != 0) { desc = substr(desc, 1, ti-2); print $1 "\t: 0x" substr($3, 4, 16) " ports " $2 " " desc " " type " " pinfo } else { print $1 "\t: 0x" substr($3, 4, 16) " ports " $2 " " desc " " pinfo } }`
	for _, l := range lines {
		c := exec.Command("awk", prog)
		c.Stdin = strings.NewReader(l + "\n")
		want, err := c.Output()
		if err != nil {
			t.Fatal(err)
		}
		got, ok := hostsCaLine(l)
		if !ok {
			if got, ok = hostsSwitchLine(l); !ok {
				t.Fatalf("%q: neither rule took it", l)
			}
		}
		if got+"\n" != string(want) {
			t.Errorf("%q:\n got %q\nwant %q", l, got, want)
		}
	}
}
