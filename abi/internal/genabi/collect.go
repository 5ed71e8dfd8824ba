package main

import (
	"bufio"
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

type generator struct {
	cc      string   // C compiler
	exec    []string // wrapper that runs the probe program, if any
	work    string   // temporary directory
	srcTree string   // unpacked kernel tree (usr/src/linux-headers-...-common)
	include string   // staged userspace include tree
	banner  string   // first line of every generated file

	types  []*cType          // structs and named unions, in output order
	byKey  map[string]*cType // "struct NAME" / "union NAME" -> type
	groups []*constGroup     // enums and runs of #defines, in output order
	consts []*constant       // every constant, in output order

	layoutRows map[string][]*layoutRow // Go type name -> measured fields
}

// cType is a named C struct or union from one of the covered headers.
type cType struct {
	kind   string // "struct" or "union"
	cname  string
	goName string
	header string // e.g. "ib_user_verbs.h"
	line   int
	dt     *dwarf.StructType

	gs       *goStruct // Go layout, built by layoutAll
	building bool
}

func (t *cType) key() string { return t.kind + " " + t.cname }

// constGroup is one C enum or one run of consecutive #defines.
type constGroup struct {
	header string
	line   int
	enum   bool
	name   string // enum tag; "" for an anonymous enum or #defines
	consts []*constant
}

type constant struct {
	name   string
	header string
	line   int
	ctext  string // C initializer or macro body; "" for an implicit enum value
	neg    bool   // value is -mag
	mag    uint64
	probed bool
	hex    bool // written in hex
}

// macro is an object-like #define from a covered header.
type macro struct {
	name, body, header string
	line               int
}

// skipMacros lists object-like macros of the covered headers that are not
// integer constants, with the reason. Generation fails on any other macro
// that does not evaluate to an integer, so that nothing is dropped silently.
var skipMacros = map[string]string{}

// headerSource is the C file that includes every covered header.
func (g *generator) headerSource() []byte {
	var b bytes.Buffer
	for _, h := range extraProbeIncludes {
		fmt.Fprintf(&b, "#include <%s>\n", h)
	}
	for _, h := range headers {
		fmt.Fprintf(&b, "#include <rdma/%s>\n", h)
	}
	return b.Bytes()
}

func (g *generator) cflags() []string {
	return []string{"-std=gnu11", "-D__EXPORTED_HEADERS__", "-I", g.include}
}

// headerOf maps a file name from gcc (line markers, DWARF) to a covered
// header, or "".
func (g *generator) headerOf(file string) string {
	dir, base := filepath.Split(file)
	if filepath.Clean(dir) != filepath.Join(g.include, "rdma") {
		return ""
	}
	for _, h := range headers {
		if h == base {
			return h
		}
	}
	return ""
}

func headerIndex(h string) int {
	for i, x := range headers {
		if x == h {
			return i
		}
	}
	panic("unknown header " + h)
}

// collect finds every struct, union, enum and #define of the covered headers.
func (g *generator) collect() error {
	src := filepath.Join(g.work, "headers.c")
	if err := os.WriteFile(src, g.headerSource(), 0o644); err != nil {
		return err
	}
	macros, err := g.macros(src)
	if err != nil {
		return err
	}
	obj := filepath.Join(g.work, "headers.o")
	args := append(g.cflags(), "-g", "-fno-eliminate-unused-debug-types", "-c", "-o", obj, src)
	if out, err := command(g.work, g.cc, args...); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", g.cc, strings.Join(args, " "), err, out)
	}
	enums, err := g.readDWARF(obj)
	if err != nil {
		return err
	}
	if err := g.checkAgainstText(enums); err != nil {
		return err
	}
	return g.buildConstGroups(macros, enums)
}

var lineMarker = regexp.MustCompile(`^# (\d+) "(.*)"`)

// macros lists the object-like #defines of the covered headers, using
// "gcc -E -dD" so that conditionals are honoured.
func (g *generator) macros(src string) ([]macro, error) {
	args := append(g.cflags(), "-E", "-dD", src)
	out, err := command(g.work, g.cc, args...)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v\n%s", g.cc, strings.Join(args, " "), err, out)
	}
	var (
		res   []macro
		index = map[string]int{}
		file  string
		line  int
	)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		text := sc.Text()
		if m := lineMarker.FindStringSubmatch(text); m != nil {
			line, _ = strconv.Atoi(m[1])
			file = m[2]
			continue
		}
		cur := line
		line++
		h := g.headerOf(file)
		if h == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(text, "#undef "); ok {
			if i, ok := index[strings.TrimSpace(rest)]; ok {
				res[i].name = "" // undefined again: drop it
			}
			continue
		}
		rest, ok := strings.CutPrefix(text, "#define ")
		if !ok {
			continue
		}
		end := strings.IndexAny(rest, " \t(")
		name, body := rest, ""
		if end >= 0 {
			if rest[end] == '(' {
				continue // function-like macro
			}
			name, body = rest[:end], strings.TrimSpace(rest[end:])
		}
		if body == "" {
			continue // include guard or flag macro: no value
		}
		if strings.HasPrefix(body, `"`) {
			continue // string
		}
		if _, ok := skipMacros[name]; ok {
			continue
		}
		if _, dup := index[name]; dup {
			continue
		}
		index[name] = len(res)
		res = append(res, macro{name: name, body: strings.Join(strings.Fields(body), " "), header: h, line: cur})
	}
	var kept []macro
	for _, m := range res {
		if m.name != "" {
			kept = append(kept, m)
		}
	}
	return kept, sc.Err()
}

type enumInfo struct {
	name    string
	header  string
	line    int
	members []string
}

// readDWARF reads the structs, unions and enums declared in the covered
// headers from the debug information of obj.
func (g *generator) readDWARF(obj string) ([]*enumInfo, error) {
	f, err := elf.Open(obj)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		return nil, err
	}
	g.byKey = map[string]*cType{}
	var enums []*enumInfo
	var files []*dwarf.LineFile
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, err
		}
		if e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit {
			lr, err := d.LineReader(e)
			if err != nil {
				return nil, err
			}
			files = lr.Files()
			continue
		}
		if e.Tag != dwarf.TagStructType && e.Tag != dwarf.TagUnionType && e.Tag != dwarf.TagEnumerationType {
			continue
		}
		if decl, _ := e.Val(dwarf.AttrDeclaration).(bool); decl {
			continue
		}
		fi, ok := e.Val(dwarf.AttrDeclFile).(int64)
		if !ok || fi < 0 || int(fi) >= len(files) || files[fi] == nil {
			continue
		}
		h := g.headerOf(files[fi].Name)
		if h == "" {
			continue
		}
		line64, _ := e.Val(dwarf.AttrDeclLine).(int64)
		name, _ := e.Val(dwarf.AttrName).(string)
		typ, err := d.Type(e.Offset)
		if err != nil {
			return nil, err
		}
		switch e.Tag {
		case dwarf.TagEnumerationType:
			et := typ.(*dwarf.EnumType)
			ei := &enumInfo{name: name, header: h, line: int(line64)}
			for _, v := range et.Val {
				ei.members = append(ei.members, v.Name)
			}
			enums = append(enums, ei)
		default:
			if name == "" {
				continue // anonymous: reached through the members that use it
			}
			st := typ.(*dwarf.StructType)
			t := &cType{kind: st.Kind, cname: name, goName: goIdent(name), header: h, line: int(line64), dt: st}
			if old, dup := g.byKey[t.key()]; dup {
				return nil, fmt.Errorf("%s defined twice (%s:%d, %s:%d)", t.key(), old.header, old.line, h, t.line)
			}
			g.byKey[t.key()] = t
			g.types = append(g.types, t)
		}
	}
	sort.SliceStable(g.types, func(i, j int) bool {
		a, b := g.types[i], g.types[j]
		if a.header != b.header {
			return headerIndex(a.header) < headerIndex(b.header)
		}
		return a.line < b.line
	})
	seen := map[string]string{}
	for _, t := range g.types {
		if other, dup := seen[t.goName]; dup {
			return nil, fmt.Errorf("%s and %s both map to Go name %s", other, t.key(), t.goName)
		}
		seen[t.goName] = t.key()
	}
	return enums, nil
}

var (
	textTypeDef  = regexp.MustCompile(`(?m)^\s*(struct|union|enum)\s+(\w+)\s*\{`)
	textAnonEnum = regexp.MustCompile(`(?m)^\s*enum\s*\{`)
	cComment     = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)
)

// stripComments blanks C comments, keeping newlines so line numbers stay.
func stripComments(s string) string {
	return cComment.ReplaceAllStringFunc(s, func(c string) string {
		return strings.Map(func(r rune) rune {
			if r == '\n' {
				return r
			}
			return ' '
		}, c)
	})
}

// checkAgainstText cross-checks the DWARF findings against a plain text
// scan of the headers for "struct NAME {", "union NAME {", "enum NAME {"
// and "enum {", so that a definition that gcc did not see (for example one
// inside #ifdef __KERNEL__) is noticed rather than silently missing.
func (g *generator) checkAgainstText(enums []*enumInfo) error {
	for _, h := range headers {
		b, err := os.ReadFile(filepath.Join(g.include, "rdma", h))
		if err != nil {
			return err
		}
		text := stripComments(string(b))
		want := map[string]bool{}
		for _, m := range textTypeDef.FindAllStringSubmatch(text, -1) {
			want[m[1]+" "+m[2]] = true
		}
		anon := len(textAnonEnum.FindAllString(text, -1))
		got := map[string]bool{}
		for _, t := range g.types {
			if t.header == h {
				got[t.key()] = true
			}
		}
		gotAnon := 0
		for _, e := range enums {
			if e.header != h {
				continue
			}
			if e.name == "" {
				gotAnon++
			} else {
				got["enum "+e.name] = true
			}
		}
		for k := range want {
			if !got[k] {
				return fmt.Errorf("<rdma/%s> defines %s in its text but gcc's debug info lacks it", h, k)
			}
		}
		for k := range got {
			if !want[k] {
				return fmt.Errorf("gcc's debug info has %s from <rdma/%s> but the text scan did not find it", k, h)
			}
		}
		if anon != gotAnon {
			return fmt.Errorf("<rdma/%s>: %d anonymous enums in the text, %d in gcc's debug info", h, anon, gotAnon)
		}
	}
	return nil
}

// enumInitializers returns the C initializer text of each member of the
// enum whose definition starts at line (1-based) of header h.
func (g *generator) enumInitializers(h string, line int, members []string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(g.include, "rdma", h))
	if err != nil {
		return nil, err
	}
	text := stripComments(string(b))
	lines := strings.SplitAfter(text, "\n")
	if line < 1 || line > len(lines) {
		return nil, fmt.Errorf("<rdma/%s>:%d: no such line", h, line)
	}
	rest := strings.Join(lines[line-1:], "")
	open := strings.IndexByte(rest, '{')
	if open < 0 {
		return nil, fmt.Errorf("<rdma/%s>:%d: no enum body", h, line)
	}
	depth, end := 0, -1
	for i := open; i < len(rest) && end < 0; i++ {
		switch rest[i] {
		case '{', '(':
			depth++
		case '}', ')':
			depth--
			if depth == 0 {
				end = i
			}
		}
	}
	if end < 0 {
		return nil, fmt.Errorf("<rdma/%s>:%d: unterminated enum", h, line)
	}
	body := rest[open+1 : end]
	if strings.Contains(body, "#") {
		return nil, fmt.Errorf("<rdma/%s>:%d: preprocessor directive inside an enum is not handled", h, line)
	}
	var items []string
	depth, start := 0, 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				items = append(items, body[start:i])
				start = i + 1
			}
		}
	}
	items = append(items, body[start:])
	res := map[string]string{}
	var names []string
	for _, it := range items {
		it = strings.TrimSpace(it)
		if it == "" {
			continue
		}
		name, init, _ := strings.Cut(it, "=")
		name = strings.TrimSpace(name)
		names = append(names, name)
		res[name] = strings.Join(strings.Fields(init), " ")
	}
	if strings.Join(names, ",") != strings.Join(members, ",") {
		return nil, fmt.Errorf("<rdma/%s>:%d: enum members in the text %v differ from gcc's %v", h, line, names, members)
	}
	return res, nil
}

// buildConstGroups orders enums and #defines by header and line and groups
// consecutive #defines.
func (g *generator) buildConstGroups(macros []macro, enums []*enumInfo) error {
	type item struct {
		header string
		line   int
		m      *macro
		e      *enumInfo
	}
	var items []item
	for i := range macros {
		m := &macros[i]
		items = append(items, item{header: m.header, line: m.line, m: m})
	}
	for _, e := range enums {
		items = append(items, item{header: e.header, line: e.line, e: e})
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if a.header != b.header {
			return headerIndex(a.header) < headerIndex(b.header)
		}
		return a.line < b.line
	})
	seen := map[string]*constant{}
	var cur *constGroup
	for _, it := range items {
		if it.e != nil {
			inits, err := g.enumInitializers(it.header, it.line, it.e.members)
			if err != nil {
				return err
			}
			grp := &constGroup{header: it.header, line: it.line, enum: true, name: it.e.name}
			for _, n := range it.e.members {
				if old, dup := seen[n]; dup {
					return fmt.Errorf("enum member %s (<rdma/%s>) is also defined in <rdma/%s>", n, it.header, old.header)
				}
				c := &constant{name: n, header: it.header, line: it.line, ctext: inits[n]}
				seen[n] = c
				grp.consts = append(grp.consts, c)
			}
			g.groups = append(g.groups, grp)
			cur = nil
			continue
		}
		m := it.m
		if _, dup := seen[m.name]; dup {
			continue // the same macro defined again: gcc accepted it, so the value is the same
		}
		if cur == nil || cur.header != m.header {
			cur = &constGroup{header: m.header, line: m.line}
			g.groups = append(g.groups, cur)
		}
		c := &constant{name: m.name, header: m.header, line: m.line, ctext: m.body}
		seen[m.name] = c
		cur.consts = append(cur.consts, c)
	}
	for _, grp := range g.groups {
		g.consts = append(g.consts, grp.consts...)
	}
	return nil
}
