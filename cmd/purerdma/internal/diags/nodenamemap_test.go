package diags

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestNodeNameMap reads maps as util/node_name_map.c does: comments and
// blank lines skipped, the name up to a quote or '#' (strtok: those at
// its start are skipped), the first of two lines of a GUID kept, a line
// without a GUID failing the map with rdma-core's two warnings.
func TestNodeNameMap(t *testing.T) {
	dir := t.TempDir()
	open := func(text string) (*nodeNameMap, string) {
		t.Helper()
		p := filepath.Join(dir, "map")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		var errb bytes.Buffer
		return openNodeNameMap(p, true, &errb), errb.String()
	}
	m, warn := open("# a map\n\n  0x0002c90300000001 \"sw one\" # spine\n0x10 leaf two # x\n0x10 again\n0100\t\"oct\"\n0x11\n0x12 #only\n")
	if m == nil || warn != "" {
		t.Fatal(warn)
	}
	want := map[uint64]string{0x0002c90300000001: "sw one", 0x10: "leaf two ", 0100: "oct", 0x12: "only"}
	if len(m.names) != len(want) {
		t.Fatalf("%q", m.names)
	}
	for g, n := range want {
		if m.names[g] != n {
			t.Errorf("%#x: %q, want %q", g, m.names[g], n)
		}
	}
	if got := m.remap(0x10, []byte("desc")); got != "leaf two " {
		t.Errorf("remap: %q", got)
	}
	if got := (*nodeNameMap)(nil).remap(7, []byte("a\tb\x01c\x00d")); got != "a b c" {
		t.Errorf("clean_nodedesc: %q", got)
	}
	for _, line := range []string{"zz top", "0x12x name", "-"} {
		p := filepath.Join(dir, "map")
		if m, warn := open("0x1 ok\n" + line + "\n"); m != nil || warn != "WARNING failed to parse node name map \""+p+"\"\nWARNING failed line: \""+line+"\"\n" {
			t.Errorf("%q: %v %q", line, m, warn)
		}
	}
	var errb bytes.Buffer
	if m := openNodeNameMap(filepath.Join(dir, "none"), true, &errb); m != nil || !strings.Contains(errb.String(), "(No such file or directory)") {
		t.Errorf("%v %q", m, errb.String())
	}
}

// TestCombinedDest reads smpquery -c's destinations as
// resolve_portid_str's IB_DEST_DRSLID does.
func TestCombinedDest(t *testing.T) {
	for _, c := range []struct{ lid, route, want string }{
		{"6", "0,12", "Lid 6 DR path slid 2; dlid 65535; 0,12"},
		{"0x6", "0,1,x,3", "Lid 6 DR path slid 2; dlid 65535; 0,1,0,3"},
		{"6", "0", "Lid 6"}, {"6", "(null)", "Lid 6"},
	} {
		d, err := parseCombinedDest(c.lid, c.route, 2)
		if err != nil || d.String() != c.want || !d.dr || d.slid != 2 {
			t.Errorf("%s %s: %v %v", c.lid, c.route, d, err)
		}
	}
	for _, lid := range []string{"0", "x", "0xc000", "70000"} {
		if _, err := parseCombinedDest(lid, "0,1", 2); err == nil {
			t.Errorf("%s accepted", lid)
		}
	}
}

// TestReadFileBounded: the tools' reads of the files they are given stop
// at their bound, a longer file failing with EFBIG.
func TestReadFileBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 11), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := readFileBounded(p, 11); err != nil || len(b) != 11 {
		t.Errorf("at the bound: %d bytes, %v", len(b), err)
	}
	if _, err := readFileBounded(p, 10); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("past the bound: %v, want EFBIG", err)
	}
	if _, err := readFileBounded(filepath.Join(t.TempDir(), "none"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}
