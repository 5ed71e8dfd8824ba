// Command apicheck writes or checks the file of purerdma's exported API
// (api/purerdma.txt), one line per exported name, like the api/ files of
// Go's own repository: a change to the public surface shows in the diff
// and fails `make lint` until the file is updated with `make api`.
//
//	go run ./api/internal/apicheck            # print the API
//	go run ./api/internal/apicheck -w FILE    # write it
//	go run ./api/internal/apicheck -check FILE
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// public are the packages a user imports, relative to the module root.
var public = []string{".", "abi", "counters", "flow", "rdmanl", "sysfs", "umad", "umad/netdisc", "uverbs"}

const module = "github.com/purerdma/rdma"

func main() {
	write := flag.String("w", "", "write the API to this file")
	check := flag.String("check", "", "fail if the API differs from this file")
	flag.Parse()
	lines, err := api()
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicheck:", err)
		os.Exit(1)
	}
	out := strings.Join(lines, "\n") + "\n"
	switch {
	case *write != "":
		if err := os.WriteFile(*write, []byte(out), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "apicheck:", err)
			os.Exit(1)
		}
	case *check != "":
		b, err := os.ReadFile(*check)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apicheck:", err)
			os.Exit(1)
		}
		if string(b) != out {
			fmt.Fprintf(os.Stderr, "apicheck: the exported API differs from %s:\n%s\nIf the change is meant, run: make api\n", *check, diff(string(b), out))
			os.Exit(1)
		}
	default:
		fmt.Print(out)
	}
}

func api() ([]string, error) {
	var lines []string
	for _, dir := range public {
		l, err := pkgAPI(dir)
		if err != nil {
			return nil, err
		}
		lines = append(lines, l...)
	}
	sort.Strings(lines)
	return lines, nil
}

func pkgAPI(dir string) ([]string, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var asts []*ast.File
	name := ""
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || excluded(f) {
			continue
		}
		a, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if !buildsOnLinux(a) {
			continue
		}
		name = a.Name.Name
		asts = append(asts, a)
	}
	path := module
	if dir != "." {
		path += "/" + dir
	}
	p, err := doc.NewFromFiles(fset, asts, path)
	if err != nil {
		return nil, err
	}
	pre := "pkg " + name + ", "
	src := func(n any) string {
		var b bytes.Buffer
		printer.Fprint(&b, fset, n)
		return strings.Join(strings.Fields(b.String()), " ")
	}
	var out []string
	values := func(vs []*doc.Value, kind string) {
		for _, v := range vs {
			for _, s := range v.Decl.Specs {
				vs := s.(*ast.ValueSpec)
				for _, n := range vs.Names {
					if !n.IsExported() {
						continue
					}
					l := pre + kind + " " + n.Name
					if vs.Type != nil {
						l += " " + src(vs.Type)
					}
					out = append(out, l)
				}
			}
		}
	}
	fn := func(f *doc.Func, recv string) {
		t := f.Decl.Type
		sig := src(&ast.FuncType{TypeParams: t.TypeParams, Params: t.Params, Results: t.Results})
		sig = strings.TrimPrefix(sig, "func")
		if recv != "" {
			out = append(out, pre+"method ("+recv+") "+f.Name+sig)
		} else {
			out = append(out, pre+"func "+f.Name+sig)
		}
	}
	values(p.Consts, "const")
	values(p.Vars, "var")
	for _, f := range p.Funcs {
		fn(f, "")
	}
	for _, t := range p.Types {
		ts := t.Decl.Specs[0].(*ast.TypeSpec)
		for _, s := range t.Decl.Specs {
			if s.(*ast.TypeSpec).Name.Name == t.Name {
				ts = s.(*ast.TypeSpec)
			}
		}
		head := pre + "type " + t.Name
		if ts.Assign != 0 {
			head += " = " + src(ts.Type)
			out = append(out, head)
		} else {
			switch x := ts.Type.(type) {
			case *ast.StructType:
				out = append(out, head+" struct")
				for _, f := range x.Fields.List {
					for _, n := range f.Names {
						if n.IsExported() {
							out = append(out, head+", "+n.Name+" "+src(f.Type))
						}
					}
					if len(f.Names) == 0 {
						out = append(out, head+", embedded "+src(f.Type))
					}
				}
			case *ast.InterfaceType:
				out = append(out, head+" interface")
				for _, m := range x.Methods.List {
					for _, n := range m.Names {
						out = append(out, head+", "+n.Name+strings.TrimPrefix(src(m.Type), "func"))
					}
				}
			default:
				out = append(out, head+" "+src(ts.Type))
			}
		}
		values(t.Consts, "const")
		values(t.Vars, "var")
		for _, f := range t.Funcs {
			fn(f, "")
		}
		for _, m := range t.Methods {
			fn(m, src(m.Decl.Recv.List[0].Type))
		}
	}
	return out, nil
}

// excluded are files for other systems than linux.
func excluded(f string) bool {
	base := filepath.Base(f)
	for _, s := range []string{"_windows.go", "_darwin.go", "_other.go"} {
		if strings.HasSuffix(base, s) {
			return true
		}
	}
	return false
}

// buildsOnLinux reads a //go:build line: ignore, and constraints that
// exclude linux, leave the file out.
func buildsOnLinux(f *ast.File) bool {
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build ") {
				expr := c.Text[len("//go:build "):]
				if strings.Contains(expr, "ignore") || strings.Contains(expr, "!linux") {
					return false
				}
			}
		}
		if cg.Pos() > f.Package {
			break
		}
	}
	return true
}

// diff lists the lines only in want (-) and only in got (+).
func diff(want, got string) string {
	w, g := set(want), set(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if l != "" && !g[l] {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if l != "" && !w[l] {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}

func set(s string) map[string]bool {
	m := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		m[l] = true
	}
	return m
}
