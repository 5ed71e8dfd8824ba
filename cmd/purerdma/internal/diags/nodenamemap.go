package diags

// The node name map of infiniband-diags (rdma-core 44,
// util/node_name_map.c): GUIDs and the names the tools show for them.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/umad/netdisc"
)

// nodeNameMap is a parsed node name map; nil is none.
type nodeNameMap struct{ names map[uint64]string }

// openNodeNameMap is open_node_name_map: file when named (set), else the
// default map when it exists. A file that does not open or parse gives
// C's warning on stderr and no map.
func openNodeNameMap(file string, set bool, stderr io.Writer) *nodeNameMap {
	if !set {
		if _, err := os.Stat(nodeNameMapPath); err != nil {
			return nil
		}
		file = nodeNameMapPath
	}
	f, err := os.Open(file)
	if err != nil {
		errno := cli.ErrnoOf(err)
		if errno == 0 {
			errno = syscall.ENOENT
		}
		fmt.Fprintf(stderr, "WARNING failed to open node name map \"%s\" (%s)\n", file, cli.Strerror(errno))
		return nil
	}
	defer f.Close()
	m, bad := readNodeNameMap(f)
	if bad != "" {
		fmt.Fprintf(stderr, "WARNING failed to parse node name map \"%s\"\n", file)
		fmt.Fprintf(stderr, "WARNING failed line: \"%s\"\n", bad)
		return nil
	}
	return m
}

// readNodeNameMap is parse_node_map_wrap's reading of a map, lines read
// as fgets reads them into 256 bytes: blank lines and '#' lines skipped,
// a GUID (strtoull base 0) then blanks then the name (up to a '"' or
// '#', past leading ones: `0x1234 "name" # comment` names 0x1234 name).
// The first name of a GUID stands. bad is the first line that does not
// parse (the map is then nil).
func readNodeNameMap(r io.Reader) (m *nodeNameMap, bad string) {
	m = &nodeNameMap{names: map[uint64]string{}}
	rd := bufio.NewReader(r)
	for {
		line, err := readCLine(rd, 255)
		if line == "" && err != nil {
			break
		}
		p := strings.TrimLeft(line, " \t\n\v\f\r")
		if p == "" || p[0] == '#' {
			continue
		}
		guid, n := cStrtoulN(p)
		rest := p[n:]
		if n == 0 || (rest != "" && !isCSpace(rest[0]) && rest[0] != '#') {
			return nil, strings.SplitN(line, "\n", 2)[0]
		}
		rest = strings.TrimLeft(rest, " \t\n\v\f\r")
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			rest = rest[:i]
		}
		// map_name: the first token between '"' and '#'.
		name := strings.TrimLeft(rest, "\"#")
		if i := strings.IndexAny(name, "\"#"); i >= 0 {
			name = name[:i]
		}
		if name == "" {
			continue
		}
		if _, ok := m.names[guid]; !ok {
			m.names[guid] = name
		}
	}
	return m, ""
}

// readCLine is fgets with a buffer of size+1: at most size bytes, to and
// with the newline.
func readCLine(rd *bufio.Reader, size int) (string, error) {
	var b strings.Builder
	for b.Len() < size {
		c, err := rd.ReadByte()
		if err != nil {
			return b.String(), err
		}
		b.WriteByte(c)
		if c == '\n' {
			break
		}
	}
	return b.String(), nil
}

// remapNode is remap_node_name for a discovered node.
func (m *nodeNameMap) remapNode(n *netdisc.Node) string { return m.remap(n.GUID, []byte(n.Desc)) }

// remap is remap_node_name: the map's name for guid, else the node
// description cleaned (clean_nodedesc: at most 64 bytes, to its NUL, each
// byte that is not printable a space).
func (m *nodeNameMap) remap(guid uint64, desc []byte) string {
	if m != nil {
		if n, ok := m.names[guid]; ok {
			return n
		}
	}
	d := []byte(cString(desc[:min(len(desc), 64)]))
	for i, c := range d {
		if c < 0x20 || c > 0x7e {
			d[i] = ' '
		}
	}
	return string(d)
}

func isCSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }
func isXDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// cStrtoulN is glibc's strtoul(s, &end, 0) on an LP64 host: the value
// and how many bytes it read (0: no number). Leading spaces and a sign
// are read; a minus negates modulo 2⁶⁴; an overflow gives 2⁶⁴−1.
func cStrtoulN(s string) (uint64, int) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	base := 10
	start := i
	if i < len(s) && s[i] == '0' {
		if i+2 < len(s)+0 && (s[i+1] == 'x' || s[i+1] == 'X') && i+2 < len(s) && isXDigit(s[i+2]) {
			base, i = 16, i+2
			start = i
		} else {
			base = 8
		}
	}
	var v uint64
	over := false
	j := i
	for ; j < len(s); j++ {
		d, ok := digitVal(s[j])
		if !ok || d >= base {
			break
		}
		nv := v*uint64(base) + uint64(d)
		if v > (^uint64(0)-uint64(d))/uint64(base) {
			over = true
		}
		v = nv
	}
	if j == start && base != 8 {
		return 0, 0
	}
	if over {
		return ^uint64(0), j
	}
	if neg {
		v = -v
	}
	return v, j
}

func digitVal(c byte) (int, bool) {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0'), true
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10, true
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10, true
	}
	return 0, false
}

// cStrtoul is strtoul(s, NULL, 0).
func cStrtoul(s string) uint64 { v, _ := cStrtoulN(s); return v }

// cStrtol is strtol(s, NULL, 0) with errno: false on ERANGE.
func cStrtol(s string) (int64, bool) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	neg := strings.HasPrefix(t, "-")
	if neg || strings.HasPrefix(t, "+") {
		t = t[1:]
	}
	u, n := cStrtoulN(t)
	if n == 0 {
		return 0, true
	}
	if strings.HasPrefix(t, "-") || strings.HasPrefix(t, "+") {
		return 0, true // a second sign: no number
	}
	if u == ^uint64(0) && overflowed(t[:n]) || u > 1<<63 || (!neg && u == 1<<63) {
		if neg {
			return -1 << 63, false
		}
		return 1<<63 - 1, false
	}
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}

func overflowed(digits string) bool {
	_, err := strconv.ParseUint(digits, 0, 64)
	if err != nil {
		// ParseUint's base 0 reads "0x" and a leading "0" as C does,
		// but also "0b" and "0o" and underscores, which cannot be here.
		return true
	}
	return false
}

// strncmp64 is strncmp(name, desc, 64) == 0 for a name without NUL
// bytes and a description of up to 64 bytes.
func strncmp64(name string, desc []byte) bool {
	if len(name) > 64 {
		name = name[:64]
	}
	d := desc[:min(len(desc), 64)]
	if len(name) == 64 {
		return string(d) == name
	}
	return cString(d) == name
}
