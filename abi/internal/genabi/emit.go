package main

import (
	"bytes"
	"fmt"
	"go/format"
	"regexp"
	"strings"
)

func (g *generator) fileHeader(b *bytes.Buffer) {
	fmt.Fprintf(b, "%s\n\n//go:build linux\n\npackage abi\n\n", g.banner)
}

func gofmt(name string, src []byte) ([]byte, error) {
	out, err := format.Source(src)
	if err != nil {
		return nil, fmt.Errorf("gofmt %s: %v\n%s", name, err, src)
	}
	return out, nil
}

// comment writes text as // lines wrapped at about 80 columns.
func comment(b *bytes.Buffer, indent, text string) {
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(indent)*4+len(line)+1+len(w) > 77 {
			fmt.Fprintf(b, "%s// %s\n", indent, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	fmt.Fprintf(b, "%s// %s\n", indent, line)
}

func (g *generator) emitTypes() ([]byte, error) {
	var b bytes.Buffer
	g.fileHeader(&b)
	b.WriteString(`// Every type below is a C struct or union of the Linux RDMA UAPI headers, with
// the same size and field offsets on linux/amd64 and linux/arm64 (the only
// supported targets; zlayout_linux_test.go checks them against gcc). Names
// follow the C names mechanically: struct ib_uverbs_ioctl_hdr is
// IbUverbsIoctlHdr, field object_id is ObjectId. Fields named _ are padding.
// Fields marked big-endian hold network byte order; all others host order.
`)
	header := ""
	for _, t := range g.types {
		if t.header != header {
			header = t.header
			fmt.Fprintf(&b, "\n// Types from <rdma/%s>.\n", header)
		}
		b.WriteString("\n")
		comment(&b, "", fmt.Sprintf("%s is %s from <rdma/%s>.", t.goName, t.key(), t.header))
		for _, n := range t.gs.notes {
			b.WriteString("//\n")
			comment(&b, "", n)
		}
		fmt.Fprintf(&b, "type %s struct {\n", t.goName)
		writeFields(&b, t.gs, "\t")
		b.WriteString("}\n")
	}
	return gofmt("ztypes_linux.go", b.Bytes())
}

func writeFields(b *bytes.Buffer, gs *goStruct, indent string) {
	for _, f := range gs.fields {
		for _, d := range f.doc {
			comment(b, indent, d)
		}
		var notes []string
		if f.typ.bigEndian {
			notes = append(notes, "big-endian")
		}
		if f.typ.note != "" {
			notes = append(notes, f.typ.note)
		}
		trailing := ""
		if len(notes) > 0 {
			trailing = " // " + strings.Join(notes, "; ")
		}
		if f.typ.inline != nil {
			fmt.Fprintf(b, "%s%s struct {\n", indent, f.name)
			writeFields(b, f.typ.inline, indent+"\t")
			fmt.Fprintf(b, "%s}%s\n", indent, trailing)
			continue
		}
		fmt.Fprintf(b, "%s%s %s%s\n", indent, f.name, f.typ.expr, trailing)
	}
}

var plainLiteral = regexp.MustCompile(`^(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*$`)

var cIdent = regexp.MustCompile(`^\(?([A-Za-z_][A-Za-z0-9_]*)\)?$`)

// hexStyle reports whether c is best written in hex: when its C text uses
// hex, shifts or bit operations, or names a constant written in hex; a
// member without initializer follows the member before it.
func hexStyle(c *constant, prev *constant, byName map[string]*constant) bool {
	t := c.ctext
	switch {
	case t == "":
		return prev != nil && prev.hex
	case strings.Contains(t, "0x") || strings.Contains(t, "0X") || strings.ContainsAny(t, "<~|") || strings.Contains(t, "_IO"):
		return true
	}
	if m := cIdent.FindStringSubmatch(t); m != nil {
		if ref := byName[m[1]]; ref != nil {
			return ref.hex
		}
	}
	return false
}

// goValue spells a constant's value.
func goValue(c *constant) string {
	switch {
	case c.neg && strings.Contains(c.ctext, "~"):
		return fmt.Sprintf("^0x%x", c.mag-1) // ^x == -x-1
	case c.hex && c.neg:
		return fmt.Sprintf("-0x%x", c.mag)
	case c.hex:
		return fmt.Sprintf("0x%x", c.mag)
	case c.neg:
		return fmt.Sprintf("-%d", c.mag)
	}
	return fmt.Sprintf("%d", c.mag)
}

func (g *generator) emitConsts() ([]byte, error) {
	var b bytes.Buffer
	g.fileHeader(&b)
	b.WriteString(`// Every enum member and every integer-valued object-like #define of the Linux
// RDMA UAPI headers, with its C name. Where the C definition is an
// expression, a comment gives it.
`)
	byName := map[string]*constant{}
	for _, grp := range g.groups {
		var prev *constant
		for _, c := range grp.consts {
			c.hex = hexStyle(c, prev, byName)
			byName[c.name] = c
			prev = c
		}
	}
	header := ""
	for _, grp := range g.groups {
		if grp.header != header {
			header = grp.header
			fmt.Fprintf(&b, "\n// Constants from <rdma/%s>.\n", header)
		}
		b.WriteString("\n")
		switch {
		case grp.enum && grp.name != "":
			fmt.Fprintf(&b, "// enum %s from <rdma/%s>.\n", grp.name, grp.header)
		case grp.enum:
			fmt.Fprintf(&b, "// Anonymous enum from <rdma/%s>.\n", grp.header)
		default:
			fmt.Fprintf(&b, "// #define constants from <rdma/%s>.\n", grp.header)
		}
		b.WriteString("const (\n")
		for _, c := range grp.consts {
			fmt.Fprintf(&b, "\t%s = %s", c.name, goValue(c))
			if c.ctext != "" && !plainLiteral.MatchString(c.ctext) {
				fmt.Fprintf(&b, " // %s", c.ctext)
			}
			b.WriteString("\n")
		}
		b.WriteString(")\n")
	}
	return gofmt("zconsts_linux.go", b.Bytes())
}

func (g *generator) emitLayout() ([]byte, error) {
	var b bytes.Buffer
	g.fileHeader(&b)
	b.WriteString(`import (
	"reflect"
	"unsafe"
)

// cLayouts holds sizeof and offsetof of every type in ztypes_linux.go and of
// each of its named fields, as printed by a C program that genabi compiled
// with gcc against the same headers. Offsets count from the start of the
// outermost type; Go field path "A.B" is field B of the inline struct type
// of field A. layout_test.go compares them with the Go layout.
var cLayouts = []cLayout{
`)
	for _, t := range g.types {
		fmt.Fprintf(&b, "\t{\n\t\tGo: %q, C: %q, Size: %d,\n", t.goName, t.key(), t.gs.size)
		fmt.Fprintf(&b, "\t\tType: reflect.TypeOf(%s{}), Sizeof: unsafe.Sizeof(%s{}),\n", t.goName, t.goName)
		b.WriteString("\t\tFields: []cField{\n")
		for _, r := range g.layoutRows[t.goName] {
			fmt.Fprintf(&b, "\t\t\t{%q, %q, %d},\n", r.goPath, r.cpath, r.offset)
		}
		b.WriteString("\t\t},\n\t},\n")
	}
	b.WriteString("}\n")
	return gofmt("zlayout_linux_test.go", b.Bytes())
}
