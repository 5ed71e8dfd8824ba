package diags

// The node name map of infiniband-diags (rdma-core 44,
// util/node_name_map.c): lines of a GUID and a name, which replace the
// NodeDescription of the node of that GUID in the tools' output.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
)

// defaultNodeNameMap is IBDIAG_NODENAME_MAP_PATH, read when it exists
// and no map is named.
const defaultNodeNameMap = "/etc/infiniband-diags/ib-node-name-map"

// nodeNameMap maps node GUIDs to names; nil maps nothing.
type nodeNameMap map[uint64]string

// openNodeNameMap is open_node_name_map: the map in file (the default
// one where file is "" and it exists). A file that does not open or
// parse gives no map and a warning on stderr, as rdma-core's does.
func openNodeNameMap(file string, stderr io.Writer) nodeNameMap {
	if file == "" {
		if _, err := os.Stat(defaultNodeNameMap); err != nil {
			return nil
		}
		file = defaultNodeNameMap
	}
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintf(stderr, "WARNING failed to open node name map \"%s\" (%s)\n", file, cli.Strerror(cli.ErrnoOf(err)))
		return nil
	}
	defer f.Close()
	m, bad, err := parseNodeNameMap(f)
	switch {
	case bad != "":
		fmt.Fprintf(stderr, "WARNING failed to parse node name map \"%s\"\nWARNING failed line: \"%s\"\n", file, bad)
		return nil
	case err != nil:
		fmt.Fprintf(stderr, "WARNING failed to open node name map \"%s\" (%s)\n", file, cli.Strerror(syscall.EIO))
		return nil
	}
	return m
}

// parseNodeNameMap reads a map: blank lines and lines starting with '#'
// skipped, else a GUID (strtoull base 0) followed by a blank, '#' or the
// end, then the name: the text up to the first '"' or '#' after the
// blanks, quotes skipped (strtok). The first of two lines of a GUID
// wins. bad is the first line that has no GUID.
func parseNodeNameMap(r io.Reader) (m nodeNameMap, bad string, err error) {
	m = nodeNameMap{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		p := strings.TrimLeft(line, " \t\n\v\f\r")
		if p == "" || p[0] == '#' {
			continue
		}
		guid, rest, ok := cStrtoull(p)
		if !ok || (rest != "" && !strings.ContainsAny(rest[:1], " \t\n\v\f\r#")) {
			return nil, line, nil
		}
		rest = strings.TrimLeft(rest, " \t\n\v\f\r")
		name := strings.TrimLeft(rest, "\"#")
		if i := strings.IndexAny(name, "\"#"); i >= 0 {
			name = name[:i]
		}
		if name == "" {
			continue
		}
		if _, dup := m[guid]; !dup {
			m[guid] = name
		}
	}
	return m, "", sc.Err()
}

// cStrtoull is strtoull(s, &end, 0) for what a map line starts with (no
// blanks or sign): the value, the rest of s, and whether digits were read.
func cStrtoull(s string) (uint64, string, bool) {
	base, i := uint64(10), 0
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && hexDigit(s[2]) >= 0:
		base, i = 16, 2
	case len(s) > 0 && s[0] == '0':
		base = 8
	}
	var v uint64
	start := i
	for ; i < len(s); i++ {
		d := hexDigit(s[i])
		if d < 0 || uint64(d) >= base {
			break
		}
		if v > (^uint64(0)-uint64(d))/base {
			v = ^uint64(0) // ERANGE: strtoull saturates
		} else {
			v = v*base + uint64(d)
		}
	}
	return v, s[i:], i > start
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// remap is remap_node_name: the map's name for guid, else the
// NodeDescription with what is not printable made a blank
// (clean_nodedesc).
func (m nodeNameMap) remap(guid uint64, desc string) string {
	if name, ok := m[guid]; ok {
		return name
	}
	b := []byte(desc)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = ' '
		}
	}
	return string(b)
}
