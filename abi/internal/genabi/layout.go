package main

import (
	"debug/dwarf"
	"fmt"
	"strings"
)

// goType is the Go type of one field.
type goType struct {
	expr      string    // Go type expression (unless inline)
	inline    *goStruct // anonymous C struct: written inline as a Go struct type
	size      int64
	align     int64 // Go alignment on linux/amd64 and linux/arm64
	bigEndian bool  // a __be16/__be32/__be64 scalar or array of them
	ctype     string
	note      string // trailing comment
	flexTail  bool   // a struct type ending with a flexible array member
}

// goField is one Go struct field. Padding fields have name "_".
type goField struct {
	name   string
	cpath  string // C member designator from the outermost type, for offsetof
	typ    *goType
	offset int64 // from the start of the enclosing Go struct
	doc    []string
}

// goStruct is the Go layout of a C struct or union.
type goStruct struct {
	fields []*goField
	size   int64
	align  int64
	notes  []string // paragraphs for the type's doc comment

	flexTail bool // the C type ends with a flexible array member
}

// goIdent converts a C identifier to a Go one mechanically: split on "_",
// upper-case the first letter of each part, join.
func goIdent(c string) string {
	var b strings.Builder
	for _, part := range strings.Split(c, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]))
		b.WriteString(part[1:])
	}
	return b.String()
}

var bigEndianTypedefs = map[string]bool{"__be16": true, "__be32": true, "__be64": true}

func (g *generator) layoutAll() error {
	for _, t := range g.types {
		if _, err := g.layoutOf(t); err != nil {
			return err
		}
	}
	return nil
}

func (g *generator) layoutOf(t *cType) (*goStruct, error) {
	if t.gs != nil {
		return t.gs, nil
	}
	if t.building {
		return nil, fmt.Errorf("%s contains itself", t.key())
	}
	t.building = true
	defer func() { t.building = false }()
	var (
		gs  *goStruct
		err error
	)
	if t.kind == "union" {
		gs, err = g.unionType(t.dt, "")
	} else {
		gs, err = g.structType(t.dt, "")
	}
	if err != nil {
		return nil, fmt.Errorf("%s (<rdma/%s>): %w", t.key(), t.header, err)
	}
	t.gs = gs
	return gs, nil
}

// structType lays out a C struct; cprefix is the C designator of the struct
// inside the outermost type ("" for the outermost type itself).
func (g *generator) structType(st *dwarf.StructType, cprefix string) (*goStruct, error) {
	var (
		fields []*goField
		notes  []string
	)
	if err := g.members(st, 0, cprefix, true, &fields, &notes); err != nil {
		return nil, err
	}
	gs, err := pad(fields, st.ByteSize)
	if err != nil {
		return nil, err
	}
	gs.notes = notes
	gs.flexTail = len(notes) > 0 // members only notes trailing flexible arrays
	return gs, nil
}

// unionType lays out a named C union as a Go struct holding its first
// largest member.
func (g *generator) unionType(u *dwarf.StructType, cprefix string) (*goStruct, error) {
	var (
		fields []*goField
		notes  []string
	)
	if err := g.unionMember(u, 0, cprefix, "", true, &fields, &notes); err != nil {
		return nil, err
	}
	// The union's own description goes into the type's doc comment.
	if len(fields) > 0 && len(fields[0].doc) > 0 {
		fields[0].doc = fields[0].doc[1:]
	}
	var alts []string
	for _, m := range u.Field {
		alts = append(alts, describeMember(m))
	}
	notes = append([]string{fmt.Sprintf("Go has no unions: the struct holds the first of the largest members of the C union, which are %s.", strings.Join(alts, ", "))}, notes...)
	gs, err := pad(fields, u.ByteSize)
	if err != nil {
		return nil, err
	}
	gs.notes = notes
	return gs, nil
}

// members appends the Go fields for the members of C struct st, which lies
// at offset base of the Go struct being built. Anonymous struct members are
// flattened, as C does.
func (g *generator) members(st *dwarf.StructType, base int64, cprefix string, atEnd bool, out *[]*goField, notes *[]string) error {
	if st.Incomplete {
		return fmt.Errorf("incomplete type %s", st)
	}
	for i, f := range st.Field {
		last := atEnd && i == len(st.Field)-1
		if f.BitSize != 0 {
			return fmt.Errorf("bit-field %s is not supported", f.Name)
		}
		off := base + f.ByteOffset
		if f.Type.Size() == 0 {
			if !last {
				return fmt.Errorf("zero-size member %q is not the last member", f.Name)
			}
			*notes = append(*notes, flexNote(f, off))
			continue
		}
		if u, ok := f.Type.(*dwarf.StructType); ok && u.StructName == "" {
			switch {
			case f.Name == "" && u.Kind == "struct":
				if err := g.members(u, off, cprefix, last, out, notes); err != nil {
					return err
				}
				continue
			case u.Kind == "union":
				if err := g.unionMember(u, off, cprefix, f.Name, last, out, notes); err != nil {
					return err
				}
				continue
			}
		}
		if f.Name == "" {
			return fmt.Errorf("anonymous member of type %s is not handled", f.Type)
		}
		typ, err := g.goTypeOf(f.Type, cprefix+f.Name+".")
		if err != nil {
			return fmt.Errorf("member %s: %w", f.Name, err)
		}
		*out = append(*out, &goField{name: goIdent(f.Name), cpath: cprefix + f.Name, typ: typ, offset: off})
		if last && typ.flexTail {
			*notes = append(*notes, fmt.Sprintf("The last member %s (%s) ends with a flexible array member, so that array follows this type in memory too.", f.Name, typ.ctype))
		}
	}
	return nil
}

// unionMember appends the Go field(s) for a union member at offset off:
// Go has no unions, so the field holds the union's first largest member,
// and a comment lists all members. name is the C member name of the union
// ("" for an anonymous union, whose members C accesses directly).
func (g *generator) unionMember(u *dwarf.StructType, off int64, cprefix, name string, last bool, out *[]*goField, notes *[]string) error {
	var pick *dwarf.StructField
	for _, m := range u.Field {
		if m.Type.Size() == u.ByteSize {
			pick = m
			break
		}
	}
	if pick == nil {
		return fmt.Errorf("union %s has no member as large as itself", name)
	}
	var alts []string
	for _, m := range u.Field {
		alts = append(alts, describeMember(m))
	}
	which := pick.Name
	if which == "" {
		which = "the " + describeType(pick.Type)
	}
	var doc string
	if name == "" {
		doc = fmt.Sprintf("C anonymous union of %s; Go holds %s.", strings.Join(alts, ", "), which)
	} else {
		doc = fmt.Sprintf("C union %s of %s; Go holds %s.", name, strings.Join(alts, ", "), which)
	}
	start := len(*out)
	switch {
	case name == "" && pick.Name == "":
		pu, ok := pick.Type.(*dwarf.StructType)
		if !ok {
			return fmt.Errorf("anonymous union member of type %s is not handled", pick.Type)
		}
		var err error
		if pu.Kind == "struct" {
			err = g.members(pu, off, cprefix, last, out, notes)
		} else {
			err = g.unionMember(pu, off, cprefix, "", last, out, notes)
		}
		if err != nil {
			return err
		}
	case name == "":
		typ, err := g.goTypeOf(pick.Type, cprefix+pick.Name+".")
		if err != nil {
			return fmt.Errorf("member %s: %w", pick.Name, err)
		}
		*out = append(*out, &goField{name: goIdent(pick.Name), cpath: cprefix + pick.Name, typ: typ, offset: off})
	default:
		inner := cprefix + name + "."
		if pick.Name != "" {
			inner += pick.Name + "."
		}
		typ, err := g.goTypeOf(pick.Type, inner)
		if err != nil {
			return fmt.Errorf("member %s: %w", name, err)
		}
		*out = append(*out, &goField{name: goIdent(name), cpath: cprefix + name, typ: typ, offset: off})
	}
	if len(*out) > start {
		(*out)[start].doc = append([]string{doc}, (*out)[start].doc...)
	}
	return nil
}

// goTypeOf maps a C type to a Go type. cprefix is the C designator prefix
// for the members of an anonymous struct type, which becomes an inline Go
// struct type.
func (g *generator) goTypeOf(t dwarf.Type, cprefix string) (*goType, error) {
	switch t := t.(type) {
	case *dwarf.TypedefType:
		inner, err := g.goTypeOf(t.Type, cprefix)
		if err != nil {
			return nil, err
		}
		c := *inner
		c.ctype = t.Name
		if bigEndianTypedefs[t.Name] {
			c.bigEndian = true
		}
		return &c, nil
	case *dwarf.QualType:
		return g.goTypeOf(t.Type, cprefix)
	case *dwarf.UintType:
		return scalar("uint", t.ByteSize, t.Name)
	case *dwarf.IntType:
		return scalar("int", t.ByteSize, t.Name)
	case *dwarf.UcharType:
		return scalar("uint", t.ByteSize, t.Name)
	case *dwarf.CharType:
		return nil, fmt.Errorf("type %s (plain char) has arch-dependent signedness; not handled", t.Name)
	case *dwarf.EnumType:
		typ, err := scalar("uint", t.ByteSize, "enum "+t.EnumName)
		if err != nil {
			return nil, err
		}
		if t.EnumName == "" {
			typ.ctype = "enum"
		}
		return typ, nil
	case *dwarf.PtrType:
		return &goType{expr: "uint64", size: 8, align: 8, ctype: t.String(), note: "C pointer " + t.String()}, nil
	case *dwarf.ArrayType:
		if t.Count <= 0 {
			return nil, fmt.Errorf("array %s of unknown length in the middle of a struct", t)
		}
		elem, err := g.goTypeOf(t.Type, cprefix)
		if err != nil {
			return nil, err
		}
		if elem.inline != nil {
			return nil, fmt.Errorf("array of an anonymous struct is not handled")
		}
		return &goType{
			expr:      fmt.Sprintf("[%d]%s", t.Count, elem.expr),
			size:      t.Count * elem.size,
			align:     elem.align,
			bigEndian: elem.bigEndian,
			ctype:     fmt.Sprintf("%s[%d]", elem.ctype, t.Count),
			note:      elem.note,
		}, nil
	case *dwarf.StructType:
		if t.StructName == "" {
			if t.Kind != "struct" {
				return nil, fmt.Errorf("anonymous union type in this position is not handled")
			}
			gs, err := g.structType(t, cprefix)
			if err != nil {
				return nil, err
			}
			return &goType{inline: gs, size: gs.size, align: gs.align, ctype: "anonymous struct"}, nil
		}
		key := t.Kind + " " + t.StructName
		ct, ok := g.byKey[key]
		if !ok {
			// A type from outside the covered headers (struct sockaddr_in6
			// in struct rxe_av): its bytes.
			return &goType{expr: fmt.Sprintf("[%d]byte", t.ByteSize), size: t.ByteSize, align: 1, ctype: key, note: key}, nil
		}
		gs, err := g.layoutOf(ct)
		if err != nil {
			return nil, err
		}
		return &goType{expr: ct.goName, size: gs.size, align: gs.align, ctype: key, flexTail: gs.flexTail}, nil
	}
	return nil, fmt.Errorf("type %s (%T) is not handled", t, t)
}

func scalar(kind string, size int64, cname string) (*goType, error) {
	switch size {
	case 1, 2, 4, 8:
		return &goType{expr: fmt.Sprintf("%s%d", kind, size*8), size: size, align: size, ctype: cname}, nil
	}
	return nil, fmt.Errorf("%d-byte %s is not handled", size, cname)
}

// pad places fields at their C offsets, inserting explicit "_" padding, and
// checks that Go lays the struct out exactly like C.
func pad(fields []*goField, size int64) (*goStruct, error) {
	gs := &goStruct{align: 1}
	var cur int64
	names := map[string]bool{}
	for _, f := range fields {
		if names[f.name] {
			return nil, fmt.Errorf("two fields map to Go name %s", f.name)
		}
		names[f.name] = true
		if f.offset < cur {
			return nil, fmt.Errorf("field %s at offset %d overlaps the previous field (ends at %d)", f.name, f.offset, cur)
		}
		if f.offset%f.typ.align != 0 {
			if f.typ.inline != nil || !strings.HasPrefix(f.typ.expr, "[") && !isScalar(f.typ.expr) {
				return nil, fmt.Errorf("field %s (%s) at offset %d is not aligned for Go", f.name, f.typ.ctype, f.offset)
			}
			f.doc = append(f.doc, fmt.Sprintf("C %s at offset %d is less aligned than Go's %s would be; Go holds its %d bytes in host order.",
				f.typ.ctype, f.offset, f.typ.expr, f.typ.size))
			f.typ = &goType{expr: fmt.Sprintf("[%d]byte", f.typ.size), size: f.typ.size, align: 1, ctype: f.typ.ctype, bigEndian: f.typ.bigEndian}
		}
		if f.offset > cur {
			gs.fields = append(gs.fields, padField(cur, f.offset-cur))
		}
		gs.fields = append(gs.fields, f)
		cur = f.offset + f.typ.size
		gs.align = max(gs.align, f.typ.align)
	}
	if cur > size {
		return nil, fmt.Errorf("fields end at %d, beyond the C size %d", cur, size)
	}
	if cur < size {
		gs.fields = append(gs.fields, padField(cur, size-cur))
	}
	if size%gs.align != 0 {
		return nil, fmt.Errorf("sizeof %d is not a multiple of the Go alignment %d", size, gs.align)
	}
	gs.size = size
	// Go's own layout, for the record: every field must land where C has it.
	var off int64
	for _, f := range gs.fields {
		off = (off + f.typ.align - 1) / f.typ.align * f.typ.align
		if off != f.offset {
			return nil, fmt.Errorf("internal error: Go would put %s at %d, C has %d", f.name, off, f.offset)
		}
		off += f.typ.size
	}
	return gs, nil
}

func isScalar(expr string) bool {
	switch expr {
	case "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64":
		return true
	}
	return false
}

func padField(off, n int64) *goField {
	return &goField{name: "_", typ: &goType{expr: fmt.Sprintf("[%d]byte", n), size: n, align: 1}, offset: off}
}

// describeType spells a C type for comments.
func describeType(t dwarf.Type) string {
	switch t := t.(type) {
	case *dwarf.TypedefType:
		return t.Name
	case *dwarf.QualType:
		return describeType(t.Type)
	case *dwarf.ArrayType:
		if t.Count < 0 {
			return describeType(t.Type) + "[]"
		}
		return fmt.Sprintf("%s[%d]", describeType(t.Type), t.Count)
	case *dwarf.StructType:
		if t.StructName != "" {
			return t.Kind + " " + t.StructName
		}
		var names []string
		for _, f := range t.Field {
			if f.Name == "" {
				names = append(names, describeType(f.Type))
			} else {
				names = append(names, f.Name)
			}
		}
		return fmt.Sprintf("%s {%s}", t.Kind, strings.Join(names, ", "))
	}
	return t.String()
}

// describeMember spells a struct or union member for comments.
func describeMember(f *dwarf.StructField) string {
	if f.Name == "" {
		return fmt.Sprintf("%s (%d bytes)", describeType(f.Type), f.Type.Size())
	}
	return fmt.Sprintf("%s (%s, %d bytes)", f.Name, describeType(f.Type), f.Type.Size())
}

// flexNote describes a dropped zero-size trailing member.
func flexNote(f *dwarf.StructField, off int64) string {
	var what []string
	var walk func(f *dwarf.StructField)
	walk = func(f *dwarf.StructField) {
		switch t := f.Type.(type) {
		case *dwarf.ArrayType:
			what = append(what, fmt.Sprintf("%s[] (%s)", f.Name, describeType(t.Type)))
		case *dwarf.StructType:
			for _, m := range t.Field {
				if m.Type.Size() == 0 {
					if _, ok := m.Type.(*dwarf.ArrayType); ok || m.Name == "" {
						walk(m)
					}
				}
			}
		}
	}
	walk(f)
	if len(what) == 1 {
		return fmt.Sprintf("The C type ends with the flexible array member %s at offset %d, which has no Go field: the array follows the fixed part in memory.", what[0], off)
	}
	return fmt.Sprintf("The C type ends with an anonymous union of the flexible array members %s at offset %d, which has no Go field: the array follows the fixed part in memory.", strings.Join(what, ", "), off)
}
