package diags

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzFabricTextInputs feeds the text the new fabric tools read from
// files and the command line to their readers: a topology file through
// ibhosts' and ibswitches' awk rules and dash's echo, an error
// thresholds file and a node name map (ibqueryerrors), a directed route
// (str2drpath). None may panic; every output line of the filter comes
// from a line of the input.
func FuzzFabricTextInputs(f *testing.F) {
	f.Add("Switch\t8 \"S-0000000000200001\"\t\t# \"Switch2\" base port 0 lid 3 lmc 0\nCa\t2 \"H-0000000000100003\"\t\t# \"Hca2\"\nibwarn: x\n", "0,1,3")
	f.Add("SymbolErrorCounter=7\n#x\n\nPortRcvErrors=0x10\n=\n", "bogus")
	f.Add("0x100003 \"renamed\"\n 0x1 other # c\nzz\n", "")
	f.Add("Switch port 0\\c\\0101\\n", ",,,")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text, route string) {
		var out strings.Builder
		in := shEcho(strings.TrimRight(text, "\n"))
		for _, l := range strings.Split(strings.TrimSuffix(in, "\n"), "\n") {
			hostsAwk(&out, l, hostsCaLine)
			hostsAwk(&out, l, hostsSwitchLine)
		}
		if strings.Count(out.String(), "\n") > 8*(strings.Count(in, "\n")+1) {
			t.Fatalf("more output lines than the rules can print:\n%q\n%q", in, out.String())
		}
		file := filepath.Join(dir, "in")
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		readThresholds(file)
		openNodeNameMap(file, true, io.Discard)
		if d, ok := str2drpath(route); ok && len(d.path) > 63 {
			t.Fatalf("str2drpath(%q): %d hops", route, len(d.path))
		}
		r := bufio.NewReader(bytes.NewReader([]byte(text)))
		for {
			l, err := readCLine(r, 255)
			if len(l) > 255 {
				t.Fatalf("readCLine: %d bytes", len(l))
			}
			if err != nil {
				break
			}
		}
		if n := uint64(len(text)) << 40; cStrtoul(" "+strconv.FormatUint(n, 10)+text) != n && (text == "" || text[0] < '0' || text[0] > '9') {
			t.Fatalf("cStrtoul of %d then %q", n, text)
		}
		if v, _ := humanCount(uint64(len(text))<<40, len(text)%2 == 0); v < 0 {
			t.Fatalf("humanCount: %v", v)
		}
	})
}
