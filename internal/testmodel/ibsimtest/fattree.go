package ibsimtest

import (
	"fmt"
	"strings"
)

// FatTree returns an ibsim net file for a two-level fat tree: spines
// spine switches, leaves leaf switches, hcas single-port HCAs on each
// leaf, every leaf cabled once to every spine; switches have ports
// ports. Leaf l's port h+1 takes hca<l>_<h>, its port hcas+s+1 spine s;
// spine s's port l+1 takes leaf l. It returns "" when the shape does not
// fit the switches (hcas+spines or leaves above ports).
func FatTree(spines, leaves, hcas, ports int) string {
	if spines < 1 || leaves < 1 || hcas < 0 || hcas+spines > ports || leaves > ports || ports > 255 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# A fat tree of %d spines, %d leaves and %d HCAs per leaf (%d nodes),\n# written by ibsimtest.FatTree.\n\n",
		spines, leaves, hcas, spines+leaves+leaves*hcas)
	// The first leaf comes first, so that OpenSM attaches to a leaf
	// switch's port 0 by default.
	for l := 0; l < leaves; l++ {
		fmt.Fprintf(&b, "Switch\t%d \"leaf%d\"\n", ports, l)
		for h := 0; h < hcas; h++ {
			fmt.Fprintf(&b, "[%d]\t\"hca%d_%d\"[1]\n", h+1, l, h)
		}
		for s := 0; s < spines; s++ {
			fmt.Fprintf(&b, "[%d]\t\"spine%d\"[%d]\n", hcas+s+1, s, l+1)
		}
		b.WriteString("\n")
	}
	for s := 0; s < spines; s++ {
		fmt.Fprintf(&b, "Switch\t%d \"spine%d\"\n", ports, s)
		for l := 0; l < leaves; l++ {
			fmt.Fprintf(&b, "[%d]\t\"leaf%d\"[%d]\n", l+1, l, hcas+s+1)
		}
		b.WriteString("\n")
	}
	for l := 0; l < leaves; l++ {
		for h := 0; h < hcas; h++ {
			fmt.Fprintf(&b, "Hca\t1 \"hca%d_%d\"\n[1]\t\"leaf%d\"[%d]\n\n", l, h, l, h+1)
		}
	}
	return b.String()
}

// The shape of the large test fabric: 8 spines, 36 leaves of 36-port
// switches, 28 HCAs per leaf: 1,052 nodes (44 switches, 1,008 HCAs).
const (
	BigSpines = 8
	BigLeaves = 36
	BigHCAs   = 28
	BigPorts  = 36
)
