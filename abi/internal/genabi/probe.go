package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// layoutRow is one named Go field with its C designator and the offset gcc
// measured (from the start of the outermost type).
type layoutRow struct {
	goPath string // "AttrData.ElemId"
	cpath  string // "attr_data.enum_data.elem_id"
	offset int64
	goOff  int64 // offset the generator computed for Go
}

// rows lists the named fields of gs, recursing into inline struct types.
func rows(gs *goStruct, goPrefix string, base int64) []*layoutRow {
	var res []*layoutRow
	for _, f := range gs.fields {
		if f.name == "_" {
			continue
		}
		res = append(res, &layoutRow{goPath: goPrefix + f.name, cpath: f.cpath, goOff: base + f.offset})
		if f.typ.inline != nil {
			res = append(res, rows(f.typ.inline, goPrefix+f.name+".", base+f.offset)...)
		}
	}
	return res
}

// probe compiles and runs a C program that prints the value of every
// constant and sizeof/offsetof of every type and field, and checks the Go
// layouts against it.
func (g *generator) probe() error {
	var b bytes.Buffer
	b.WriteString("#include <stdio.h>\n#include <stddef.h>\n")
	b.Write(g.headerSource())
	b.WriteString(`
#define CONST(n) do { \
	if ((n) < 0) printf("C %s -%llu\n", #n, -(unsigned long long)(n)); \
	else printf("C %s %llu\n", #n, (unsigned long long)(n)); \
} while (0)

int main(void) {
`)
	for _, c := range g.consts {
		fmt.Fprintf(&b, "\tCONST(%s);\n", c.name)
	}
	g.layoutRows = map[string][]*layoutRow{}
	for _, t := range g.types {
		fmt.Fprintf(&b, "\tprintf(\"S %s %%zu\\n\", sizeof(%s));\n", t.goName, t.key())
		rs := rows(t.gs, "", 0)
		g.layoutRows[t.goName] = rs
		for _, r := range rs {
			fmt.Fprintf(&b, "\tprintf(\"O %s %s %%zu\\n\", offsetof(%s, %s));\n", t.goName, r.goPath, t.key(), r.cpath)
		}
	}
	b.WriteString("\treturn 0;\n}\n")

	src := filepath.Join(g.work, "probe.c")
	if err := os.WriteFile(src, b.Bytes(), 0o644); err != nil {
		return err
	}
	bin := filepath.Join(g.work, "probe")
	args := append(g.cflags(), "-w", "-o", bin, src)
	if out, err := command(g.work, g.cc, args...); err != nil {
		return fmt.Errorf("compiling the probe program (%s %s) failed: %v\n%s\n"+
			"(a macro that is not an integer constant belongs in skipMacros in collect.go, with the reason)",
			g.cc, strings.Join(args, " "), err, out)
	}
	run := append(append([]string{}, g.exec...), bin)
	out, err := command(g.work, run[0], run[1:]...)
	if err != nil {
		return fmt.Errorf("running the probe program: %v\n%s", err, out)
	}

	consts := map[string]*constant{}
	for _, c := range g.consts {
		consts[c.name] = c
	}
	sizes := map[string]int64{}
	offsets := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "C":
			c := consts[f[1]]
			if c == nil {
				return fmt.Errorf("probe: unexpected constant %s", f[1])
			}
			v := f[2]
			c.neg = strings.HasPrefix(v, "-")
			c.mag, err = strconv.ParseUint(strings.TrimPrefix(v, "-"), 10, 64)
			if err != nil {
				return fmt.Errorf("probe: %q: %v", sc.Text(), err)
			}
			c.probed = true
		case len(f) == 3 && f[0] == "S":
			sizes[f[1]], err = strconv.ParseInt(f[2], 10, 64)
		case len(f) == 4 && f[0] == "O":
			offsets[f[1]+" "+f[2]], err = strconv.ParseInt(f[3], 10, 64)
		default:
			return fmt.Errorf("probe: unexpected line %q", sc.Text())
		}
		if err != nil {
			return fmt.Errorf("probe: %q: %v", sc.Text(), err)
		}
	}
	for _, c := range g.consts {
		if !c.probed {
			return fmt.Errorf("probe printed no value for %s", c.name)
		}
	}
	for _, t := range g.types {
		size, ok := sizes[t.goName]
		if !ok {
			return fmt.Errorf("probe printed no size for %s", t.key())
		}
		if size != t.gs.size {
			return fmt.Errorf("sizeof(%s) = %d, but the Go layout has %d", t.key(), size, t.gs.size)
		}
		for _, r := range g.layoutRows[t.goName] {
			off, ok := offsets[t.goName+" "+r.goPath]
			if !ok {
				return fmt.Errorf("probe printed no offset for %s.%s", t.key(), r.cpath)
			}
			if off != r.goOff {
				return fmt.Errorf("offsetof(%s, %s) = %d, but Go has %s.%s at %d", t.key(), r.cpath, off, t.goName, r.goPath, r.goOff)
			}
			r.offset = off
		}
	}
	return sc.Err()
}
