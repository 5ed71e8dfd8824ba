package diags

// iblinkinfo: every port of the fabric and its link, like
// infiniband-diags' iblinkinfo (rdma-core 44, infiniband-diags/
// iblinkinfo.c, its default output; get_max_msg in ibdiag_common.c), from
// package umad/netdisc.

import (
	"fmt"
	"io"
	"strings"

	"github.com/purerdma/rdma/umad/netdisc"
)

const iblinkinfoUsage = `Usage: iblinkinfo [options]

Like infiniband-diags' iblinkinfo: walks the fabric with directed-route
SMPs (many in flight at once) and prints every port of every node found,
its link's width, speed and state, and what is at its other end.

Options:
  -C, --Ca <ca>        local device
  -P, --Port <port>    local port
  -t, --timeout <ms>   response timeout per SMP try (default 200)
      --outstanding <n>  SMPs in flight at once (default 64)
  -h, --help           this help
`

func (env *Env) runIBLinkInfo(args []string, stdout, stderr io.Writer) error {
	f, err := env.discoverTool("iblinkinfo", iblinkinfoUsage, args, stdout, stderr)
	if f == nil {
		return err
	}
	var b strings.Builder
	for i := len(f.Nodes) - 1; i >= 0; i-- {
		linkInfoNode(&b, f.Nodes[i])
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

// capInfo is the PortInfo whose capability mask counts for p: port 0's
// on a switch, the port's own on a CA (nil when not known).
func capInfo(p *netdisc.Port) []byte {
	if p.Node.Type == netdisc.TypeSwitch {
		if p0 := p.Node.Ports[0]; p0 != nil && p0.HasInfo {
			return p0.Info[:]
		}
		return nil
	}
	return p.Info[:]
}

func hasExtSpeeds(info []byte) bool { return info != nil && bits(info, 160, 32)&(1<<14) != 0 }

func linkInfoNode(w *strings.Builder, n *netdisc.Node) {
	header := false
	for _, p := range n.Ports[1:] {
		if p == nil {
			continue
		}
		if !header {
			if n.Type == netdisc.TypeSwitch {
				guid := n.GUID
				if p0 := n.Ports[0]; p0 != nil {
					guid = p0.GUID
				}
				fmt.Fprintf(w, "Switch: 0x%016x %s:\n", guid, cleanDesc(n.Desc))
			} else {
				typ := "CA"
				if n.Type == netdisc.TypeRouter {
					typ = "Router"
				}
				fmt.Fprintf(w, "%s: %s:\n", typ, cleanDesc(n.Desc))
			}
			header = true
		}
		linkInfoPort(w, n, p)
	}
}

func linkInfoPort(w *strings.Builder, n *netdisc.Node, p *netdisc.Port) {
	info := p.Info[:]
	width, speed := bits(info, 248, 8), bits(info, 280, 4)
	var espeed uint64
	ci := capInfo(p)
	if ci == nil {
		width, speed = 0, 0
	} else if hasExtSpeeds(ci) {
		espeed = bits(info, 496, 4)
	}
	state, phys := bits(info, 260, 4), bits(info, 264, 4)
	var link string
	if state != 1 {
		sp := dumpLinkSpeed(speed, 4)
		if espeed != 0 {
			sp = dumpLinkSpeedExt(espeed, 4)
		}
		link = fmt.Sprintf("(%3s %18s %6s/%8s)", dumpLinkWidth(width, 8), sp, dumpPortState(state, 4), dumpPhysState(phys, 4))
	} else {
		link = fmt.Sprintf("(              %6s/%8s)", dumpPortState(state, 4), dumpPhysState(phys, 4))
	}
	var remote string
	if r := p.Remote; r != nil {
		lid := r.BaseLID
		if lid == 0 {
			lid = r.Node.SMALID
		}
		wmsg, smsg := maxMsg(p)
		remote = fmt.Sprintf("%6d %4d[%2s] \"%s\" (%s %s)\n", lid, r.Num, "", cleanDesc(r.Node.Desc), wmsg, smsg)
	} else if state == 1 {
		remote = "           [  ] \"\" ( )\n"
	} else {
		remote = "    \"Port not available\"\n"
	}
	w.WriteString("      ")
	if n.Type != netdisc.TypeSwitch {
		fmt.Fprintf(w, "0x%016x %6d %4d[%2s] ==%s==>  %s", p.GUID, p.BaseLID, p.Num, "", link, remote)
	} else {
		fmt.Fprintf(w, "%6d %4d[%2s] ==%s==>  %s", n.SMALID, p.Num, "", link, remote)
	}
}

// maxMsg is get_max_msg: what the link could run at, where it does not.
func maxMsg(p *netdisc.Port) (width, speed string) {
	r := p.Remote
	pi, ri := p.Info[:], r.Info[:]
	sup := bits(pi, 240, 8) & bits(ri, 240, 8)
	maxW := uint64(1)
	switch {
	case sup&8 != 0:
		maxW = 8
	case sup&4 != 0:
		maxW = 4
	case sup&2 != 0:
		maxW = 2
	case sup&0x10 != 0:
		maxW = 0x10
	}
	if maxW&bits(pi, 248, 8) == 0 {
		width = "Could be " + dumpLinkWidth(maxW, 8)
	}
	getMax := func(v uint64) uint64 {
		r := uint64(1)
		for v >>= 1; v != 0; v >>= 1 {
			r <<= 1
		}
		return r
	}
	if hasExtSpeeds(capInfo(p)) && hasExtSpeeds(capInfo(r)) && bits(pi, 500, 4) != 0 && bits(ri, 500, 4) != 0 {
		m := getMax(bits(pi, 500, 4) & bits(ri, 500, 4))
		if m&bits(pi, 496, 4) == 0 {
			speed = "Could be " + dumpLinkSpeedExt(m, 4)
		}
		return width, speed
	}
	m := getMax(bits(pi, 256, 4) & bits(ri, 256, 4))
	if m&bits(pi, 280, 4) == 0 {
		speed = "Could be " + dumpLinkSpeed(m, 4)
	}
	return width, speed
}
