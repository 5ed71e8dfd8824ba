package diags

// ibstatus: infiniband-diags' ibstatus shell script (rdma-core 44,
// infiniband-diags/scripts/ibstatus), which prints sysfs files, reproduced
// with the shell's quirks: each value goes through an unquoted `cat`, so
// runs of blanks collapse to one space; a file that is missing or cannot
// be read prints "unknown" ("IB" for link_layer).

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/sysfs"
)

const ibstatusDefaultDev = "mthca0"

func ibstatusUsage(w io.Writer) error {
	fmt.Fprintf(w, "Usage:  ibstatus  [-h] [devname[:portnum]]\n")
	fmt.Fprintf(w, "\t-h:\tthis help screen\n")
	fmt.Fprintf(w, "\t--json:\tprint JSON instead of text\n")
	fmt.Fprintf(w, "\tExamples:\n")
	fmt.Fprintf(w, "\t\tibstatus mthca1\t\t# shows status of all ports of 'mthca1'\n")
	fmt.Fprintf(w, "\t\tibstatus mthca0:2\t# shows status port number 2 of 'mthca0'\n")
	fmt.Fprintf(w, "\t\tibstatus\t\t# default: shows status of all '%s' ports\n", ibstatusDefaultDev)
	return cli.ExitError{Code: 255}
}

// ibstatusPort is one port's status, the values as the script prints them.
type ibstatusPort struct {
	Device     string `json:"device"`
	Port       string `json:"port"`
	DefaultGID string `json:"default_gid"`
	BaseLID    string `json:"base_lid"`
	SMLID      string `json:"sm_lid"`
	State      string `json:"state"`
	PhysState  string `json:"phys_state"`
	Rate       string `json:"rate"`
	LinkLayer  string `json:"link_layer"`
}

// ibstatusFatal is the script's fatal: the message on standard output and
// exit status 255.
func ibstatusFatal(w io.Writer, msg string) error {
	fmt.Fprintln(w, "Fatal error: ", msg)
	return cli.ExitError{Code: 255}
}

func (env *Env) runIbstatus(args []string, stdout, stderr io.Writer) error {
	asJSON := false
	var devs []string
	for _, a := range args {
		if a == "--json" {
			asJSON = true
			continue
		}
		devs = append(devs, a)
	}
	if len(devs) > 0 && devs[0] == "-h" {
		return ibstatusUsage(stdout)
	}
	// On an ibsim fabric, the device libumad2sim shows instead of the
	// host's.
	env, done, err := env.simView()
	if err != nil {
		fmt.Fprintf(stderr, "ibstatus: %v\n", err)
		return cli.ExitError{Code: 255}
	}
	defer done()
	// Every read goes through package sysfs, which keeps a tree given as
	// the root inside it (a rate that is a link to /etc/passwd is the
	// tree's etc/passwd).
	fsys, err := sysfs.New(env.SysfsRoot)
	if err != nil {
		return ibstatusFatal(stdout, "No devices")
	}
	shown := env.SysfsRoot
	if env.sysfsShown != "" {
		shown = env.sysfsShown
	}
	base := filepath.Join(shown, "class", "infiniband")
	type req struct{ dev, port string } // port "+" means all
	var reqs []req
	if len(devs) == 0 {
		names, err := fsys.DirNames("class/infiniband")
		if err != nil {
			return ibstatusFatal(stdout, "No devices")
		}
		for _, n := range names {
			reqs = append(reqs, req{n, "+"})
		}
		if len(reqs) == 0 {
			reqs = append(reqs, req{"*", "+"}) // the unexpanded glob
		}
	}
	for _, a := range devs {
		// dev=`echo $1 | sed 's/:.*$//'`; port=`echo $1 | sed 's/^.*://'`
		dev, port := a, a
		if i := strings.IndexByte(a, ':'); i >= 0 {
			dev, port = a[:i], a[strings.LastIndexByte(a, ':')+1:]
		}
		if port == dev {
			port = "+"
		}
		reqs = append(reqs, req{dev, port})
	}

	var out []ibstatusPort
	for _, r := range reqs {
		portsDir := filepath.Join(base, r.dev, "ports")
		portNames, err := fsys.DirNames("class/infiniband/" + r.dev + "/ports")
		if err != nil {
			if asJSON {
				return ibstatusFatal(stderr, fmt.Sprintf("device '%s': sys files not found (%s)", r.dev, portsDir))
			}
			ibstatusWrite(stdout, out)
			return ibstatusFatal(stdout, fmt.Sprintf("device '%s': sys files not found (%s)", r.dev, portsDir))
		}
		var ports []string
		if r.port == "+" {
			ports = portNames // sorted: the shell's glob order
		} else {
			ports = strings.Fields(r.port)
		}
		for _, p := range ports {
			out = append(out, ibstatusRead(fsys, r.dev, p))
		}
	}
	if asJSON {
		if out == nil {
			out = []ibstatusPort{}
		}
		return ibJSON(stdout, out)
	}
	ibstatusWrite(stdout, out)
	return nil
}

// ibstatusRead reads one port's files as `[ -r F ] && cat F || echo
// unknown` does, each value then split into words by the shell.
func ibstatusRead(fsys *sysfs.FS, dev, port string) ibstatusPort {
	dir := "class/infiniband/" + dev + "/ports/" + port
	val := func(file, otherwise string) string {
		s, err := fsys.ReadAttr(dir + "/" + file)
		if err != nil {
			return otherwise // also a FIFO, a device node or more than a page: never read unbounded
		}
		return strings.Join(strings.Fields(s), " ")
	}
	return ibstatusPort{
		Device: dev, Port: port,
		DefaultGID: val("gids/0", "unknown"),
		BaseLID:    val("lid", "unknown"),
		SMLID:      val("sm_lid", "unknown"),
		State:      val("state", "unknown"),
		PhysState:  val("phys_state", "unknown"),
		Rate:       val("rate", "unknown"),
		LinkLayer:  val("link_layer", "IB"),
	}
}

func ibstatusWrite(w io.Writer, ports []ibstatusPort) {
	// echo "LABEL" `cat F`: the label, then a space and the words, if any.
	line := func(label, v string) {
		if v == "" {
			fmt.Fprintf(w, "%s\n", label)
			return
		}
		fmt.Fprintf(w, "%s %s\n", label, v)
	}
	for _, p := range ports {
		fmt.Fprintf(w, "Infiniband device '%s' port %s status:\n", p.Device, p.Port)
		line("\tdefault gid:\t", p.DefaultGID)
		line("\tbase lid:\t", p.BaseLID)
		line("\tsm lid:\t\t", p.SMLID)
		line("\tstate:\t\t", p.State)
		line("\tphys state:\t", p.PhysState)
		line("\trate:\t\t", p.Rate)
		line("\tlink_layer:\t", p.LinkLayer)
		fmt.Fprintln(w)
	}
}
