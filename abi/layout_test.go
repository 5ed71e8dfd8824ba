//go:build linux

package abi

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// cField is one named field of a generated type: its Go path ("A" or, for a
// field of an inline struct type, "A.B"), its C member designator and the
// offset gcc measured from the start of the outermost type.
type cField struct {
	Go     string
	C      string
	Offset uintptr
}

// cLayout is one generated type with the C sizeof measured by gcc; the
// table is cLayouts in zlayout_linux_test.go.
type cLayout struct {
	Go     string
	C      string
	Size   uintptr
	Type   reflect.Type
	Sizeof uintptr // unsafe.Sizeof of the Go type
	Fields []cField
}

// goFields lists the named fields of struct type t with their offsets from
// base, recursing into inline (unnamed) struct types; it reports types that
// must not appear in a kernel ABI struct.
func goFields(t *testing.T, typ reflect.Type, prefix string, base uintptr, out map[string]uintptr) {
	t.Helper()
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		path := prefix + f.Name
		checkKind(t, path, f.Type)
		if f.Name == "_" {
			continue
		}
		out[path] = base + f.Offset
		if f.Type.Kind() == reflect.Struct && f.Type.Name() == "" {
			goFields(t, f.Type, path+".", base+f.Offset, out)
		}
	}
	if n := typ.NumField(); n > 0 && typ.Field(n-1).Type.Size() == 0 {
		t.Errorf("%s%s: last field %s has size 0 (Go pads such structs)", typ, prefix, typ.Field(n-1).Name)
	}
}

// checkKind fails on Go types whose size depends on the target or that are
// not plain data.
func checkKind(t *testing.T, path string, typ reflect.Type) {
	t.Helper()
	switch typ.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
	case reflect.Array:
		checkKind(t, path, typ.Elem())
	case reflect.Struct:
		// Checked field by field (named types through their own entry).
	default:
		t.Errorf("field %s has type %s (kind %s); only fixed-size integers, arrays and structs are allowed", path, typ, typ.Kind())
	}
}

func TestLayout(t *testing.T) {
	for _, l := range cLayouts {
		t.Run(l.Go, func(t *testing.T) {
			if l.Type.Name() != l.Go {
				t.Fatalf("table entry %s has type %s", l.Go, l.Type)
			}
			if l.Type.Kind() != reflect.Struct {
				t.Fatalf("%s is a %s, want a struct", l.Go, l.Type.Kind())
			}
			if l.Sizeof != l.Size || l.Type.Size() != l.Size {
				t.Errorf("unsafe.Sizeof(%s{}) = %d (reflect: %d), sizeof(%s) = %d", l.Go, l.Sizeof, l.Type.Size(), l.C, l.Size)
			}
			got := map[string]uintptr{}
			goFields(t, l.Type, "", 0, got)
			want := map[string]bool{}
			for _, f := range l.Fields {
				want[f.Go] = true
				off, ok := got[f.Go]
				if !ok {
					t.Errorf("%s has no field %s (C %s)", l.Go, f.Go, f.C)
					continue
				}
				if off != f.Offset {
					t.Errorf("%s.%s is at offset %d, offsetof(%s, %s) = %d", l.Go, f.Go, off, l.C, f.C, f.Offset)
				}
			}
			for name := range got {
				if !want[name] {
					t.Errorf("%s.%s is not in the C layout table", l.Go, name)
				}
			}
		})
	}
}

// TestLayoutCoversAllTypes checks that the layout table and ztypes_linux.go
// name the same types.
func TestLayoutCoversAllTypes(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "ztypes_linux.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, s := range gd.Specs {
			declared = append(declared, s.(*ast.TypeSpec).Name.Name)
		}
	}
	var table []string
	seen := map[string]bool{}
	for _, l := range cLayouts {
		if seen[l.Go] {
			t.Errorf("%s is in the layout table twice", l.Go)
		}
		seen[l.Go] = true
		table = append(table, l.Go)
	}
	sort.Strings(declared)
	sort.Strings(table)
	if len(declared) == 0 {
		t.Fatal("ztypes_linux.go declares no types")
	}
	d, tb := strings.Join(declared, " "), strings.Join(table, " ")
	if d != tb {
		inTable := map[string]bool{}
		for _, n := range table {
			inTable[n] = true
		}
		inFile := map[string]bool{}
		for _, n := range declared {
			inFile[n] = true
			if !inTable[n] {
				t.Errorf("type %s of ztypes_linux.go is missing from the layout table", n)
			}
		}
		for _, n := range table {
			if !inFile[n] {
				t.Errorf("layout table entry %s is not a type of ztypes_linux.go", n)
			}
		}
	}
}
