package verbs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestSealed pins what makes the doors of uverbs, counters and flow
// uncallable from outside the module: Seal is a struct (untyped nil does
// not convert to it), and an Opener's function cannot be set from outside
// this package (no exported field).
func TestSealed(t *testing.T) {
	if k := reflect.TypeFor[Seal]().Kind(); k != reflect.Struct {
		t.Errorf("Seal is a %v, want a struct", k)
	}
	ot := reflect.TypeFor[Opener]()
	for i := range ot.NumField() {
		if f := ot.Field(i); f.IsExported() {
			t.Errorf("Opener has the exported field %s: code outside the module could set it", f.Name)
		}
	}
}

// TestNoWiring: the packages that share the core reach it by calls the
// compiler follows: no init functions and no package-level variables of
// function type in uverbs, counters, flow or this package.
func TestNoWiring(t *testing.T) {
	for _, dir := range []string{".", "../../uverbs", "../../counters", "../../flow"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil && d.Name.Name == "init" {
						t.Errorf("%s: an init function", name)
					}
				case *ast.GenDecl:
					if d.Tok != token.VAR {
						continue
					}
					for _, s := range d.Specs {
						vs := s.(*ast.ValueSpec)
						if _, ok := vs.Type.(*ast.FuncType); ok {
							t.Errorf("%s: package-level function variable %s", name, vs.Names[0].Name)
						}
					}
				}
			}
		}
	}
}
