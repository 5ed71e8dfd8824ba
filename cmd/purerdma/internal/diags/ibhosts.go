package diags

// ibhosts, ibswitches and ibnodes: in rdma-core 44 these are shell
// scripts (infiniband-diags/scripts/ibhosts.in, ibswitches.in,
// ibnodes.in) that run ibnetdiscover, or cat a topology file, and filter
// its text with awk. Ours run our ibnetdiscover in-process and apply the
// same filter, so their output, standard error and exit status are the
// scripts': the usage on standard output with status 255, ibnetdiscover's
// messages and status, and cat's for a topology file that does not read.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
)

// ibPath is the scripts' IBPATH, where they find ibnetdiscover.
const ibPath = "/usr/sbin"

// hostsScript is one of the scripts: its name and its awk rule for the
// node lines (the rules for lines of messages are common).
type hostsScript struct {
	name string
	node func(line string) (string, bool)
}

func (env *Env) runIBHosts(args []string, stdout, stderr io.Writer) error {
	return env.runHostsScript(hostsScript{"ibhosts", hostsCaLine}, args, stdout, stderr)
}

func (env *Env) runIBSwitches(args []string, stdout, stderr io.Writer) error {
	return env.runHostsScript(hostsScript{"ibswitches", hostsSwitchLine}, args, stdout, stderr)
}

// runIBNodes is ibnodes.in: "ibhosts $@; ibswitches $@", the exit status
// ibswitches'. $@ unquoted splits the arguments at blanks and drops the
// empty ones.
func (env *Env) runIBNodes(args []string, stdout, stderr io.Writer) error {
	var split []string
	for _, a := range args {
		split = append(split, strings.Fields(a)...)
	}
	if err := env.runIBHosts(split, stdout, stderr); err != nil && !isExit(err) {
		return err
	}
	return env.runIBSwitches(split, stdout, stderr)
}

func isExit(err error) bool {
	var ee cli.ExitError
	return errors.As(err, &ee)
}

// runHostsScript reads the script's command line as the script's loop
// does (it stops at an empty argument), gets the topology text, and
// filters it.
func (env *Env) runHostsScript(s hostsScript, args []string, stdout, stderr io.Writer) error {
	usage := func() error {
		fmt.Fprintf(stdout, "Usage: %s [-h] [<topology-file> | -y mkey -C ca_name -P ca_port -t timeout_ms]\n", s.name)
		return cli.ExitError{Code: 255}
	}
	topofile, mkey := "", "0"
	var caInfo []string
	for i := 0; i < len(args) && args[i] != ""; i++ {
		a := args[i]
		switch a {
		case "-h", "--help":
			return usage()
		case "-y", "--m_key", "-P", "--Port", "-C", "--Ca", "-t", "--timeout":
			if i+1 >= len(args) || args[i+1] == "" || strings.HasPrefix(args[i+1], "-") {
				return usage()
			}
			i++
			if a == "-y" || a == "--m_key" {
				mkey = args[i]
			} else {
				caInfo = append(caInfo, a, args[i])
			}
		default:
			if strings.HasPrefix(a, "-") || topofile != "" {
				return usage()
			}
			topofile = a
		}
	}
	var text bytes.Buffer
	var rv error
	if topofile != "" {
		b, err := readFileBounded(topofile, maxTextFile)
		if err != nil {
			// cat's message: "cat: FILE: strerror".
			var errno syscall.Errno
			msg := err.Error()
			var pe *fs.PathError
			if errors.As(err, &pe) && errors.As(pe.Err, &errno) {
				msg = cli.Strerror(errno)
			}
			fmt.Fprintf(stderr, "cat: %s: %s\n", topofile, msg)
			rv = cli.ExitError{Code: 1}
		}
		text.Write(b)
	} else {
		var b bytes.Buffer
		rv = env.runIBNetDiscover(append([]string{"-y", mkey}, caInfo...), &b, stderr)
		if rv != nil && !isExit(rv) {
			return rv
		}
		// The script runs $IBPATH/ibnetdiscover: its messages name it
		// so (IBEXIT's argv[0]).
		for _, l := range strings.SplitAfter(b.String(), "\n") {
			if strings.HasPrefix(l, "ibnetdiscover: ") {
				text.WriteString(ibPath + "/")
			}
			text.WriteString(l)
		}
	}
	// text="`...`" drops the trailing newlines; echo "$text" (dash's
	// echo, which reads backslash escapes) adds one.
	in := shEcho(strings.TrimRight(text.String(), "\n"))
	var out strings.Builder
	lines := strings.Split(in, "\n")
	if strings.HasSuffix(in, "\n") {
		lines = lines[:len(lines)-1]
	}
	for _, l := range lines {
		hostsAwk(&out, l, s.node)
	}
	if _, err := io.WriteString(stdout, out.String()); err != nil {
		return err
	}
	return rv
}

// hostsAwk applies the scripts' awk rules to one line.
func hostsAwk(out *strings.Builder, l string, node func(string) (string, bool)) {
	if s, ok := node(l); ok {
		out.WriteString(s + "\n")
	}
	if strings.HasPrefix(l, "ib") {
		out.WriteString(l + "\n")
		return
	}
	for _, m := range []string{"ibpanic:", "ibwarn:", "iberror:"} {
		if strings.Contains(l, m) {
			out.WriteString(l + "\n")
		}
	}
}

// awkFields is awk's default field splitting: runs of blanks.
func awkFields(l string) [4]string {
	var f [4]string
	fs := strings.FieldsFunc(l, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' })
	for i := 1; i < 4 && i <= len(fs); i++ {
		f[i] = fs[i-1]
	}
	return f
}

// awkSubstr is awk's substr(s, m, n): the characters at positions m to
// m+n-1, counted from 1, clipped to the string (none when n <= 0).
func awkSubstr(s string, m, n int) string {
	end := len(s) + 1
	if m+n < end {
		end = m + n
	}
	if m < 1 {
		m = 1
	}
	if m >= end {
		return ""
	}
	return s[m-1 : end-1]
}

// awkSubstrEnd is awk's substr(s, m): from position m to the end.
func awkSubstrEnd(s string, m int) string {
	if m < 1 {
		m = 1
	}
	if m > len(s) {
		return ""
	}
	return s[m-1:]
}

// awkIndex is awk's match(s, re) for the scripts' regular expressions
// that start with a literal (lit): the position of the leftmost match,
// counted from 1, or 0 when none. (A package-level regexp would be
// compiled at every start of every tool of the binary.)
func awkIndex(s, lit string) int {
	return strings.Index(s, lit) + 1
}

// awkAfterHash is substr($0, match($0, "#[ \t]*")+RLENGTH): the line after
// its first '#' and the blanks that follow it, or the whole line when it
// has none (match gives 0 and RLENGTH -1).
func awkAfterHash(l string) string {
	i := strings.IndexByte(l, '#')
	if i < 0 {
		return l
	}
	i++
	for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
		i++
	}
	return l[i:]
}

// hostsCaLine is ibhosts' rule for /^Ca/.
func hostsCaLine(l string) (string, bool) {
	if !strings.HasPrefix(l, "Ca") {
		return "", false
	}
	f := awkFields(l)
	return f[1] + "\t: 0x" + awkSubstr(f[3], 4, 16) + " ports " + f[2] + " " + awkAfterHash(l), true
}

// hostsSwitchLine is ibswitches' rule for /^Switch/: the description
// split at "port 0", and "base port 0" or "enhanced port 0" moved.
func hostsSwitchLine(l string) (string, bool) {
	if !strings.HasPrefix(l, "Switch") {
		return "", false
	}
	f := awkFields(l)
	desc := awkAfterHash(l)
	pi := awkIndex(desc, "port 0") // match(desc, "port 0.*")
	pinfo := awkSubstrEnd(desc, pi)
	desc = awkSubstr(desc, 1, pi-2)
	typ := "base port 0"
	ti := awkIndex(desc, "base port 0")
	if ti == 0 {
		typ = "enhanced port 0"
		ti = awkIndex(desc, "enhanced port 0")
	}
	if ti != 0 {
		desc = awkSubstr(desc, 1, ti-2)
	}
	head := f[1] + "\t: 0x" + awkSubstr(f[3], 4, 16) + " ports " + f[2] + " "
	if ti == 0 {
		return head + desc + " " + pinfo, true
	}
	return head + desc + " " + typ + " " + pinfo, true
}

// shEcho is dash's echo of s: its backslash escapes read (\c ends the
// output, newline included), then a newline.
func shEcho(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'c':
			return b.String()
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\':
			b.WriteByte('\\')
		case '0':
			v := 0
			for j := 0; j < 3 && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '7'; j++ {
				i++
				v = v*8 + int(s[i]-'0')
			}
			b.WriteByte(byte(v))
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	b.WriteByte('\n')
	return b.String()
}
