// Package zerotest checks that the exported methods of a package's types
// do not panic or hang on values their constructors did not make: the
// zero value and nil pointers, called with zero arguments. It stands for
// the brief's rule that public calls validate what they are given and
// return an error.
package zerotest

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"syscall"
	"testing"
	"time"
)

// Methods calls every exported method of each value in vals (pointers
// such as new(T) or (*T)(nil)) with zero arguments and fails t when one
// panics or has not returned within 30 s (a hang). Methods named in skip
// ("T.Method") are left out; give the reason next to the list. What a
// call returns that is an io.Closer is closed, so that a zero value that
// works (and opens something) leaks nothing.
func Methods(t *testing.T, skip []string, vals ...any) {
	t.Helper()
	skipped := map[string]bool{}
	for _, s := range skip {
		skipped[s] = true
	}
	for _, v := range vals {
		rv := reflect.ValueOf(v)
		rt := rv.Type()
		base, name := rt.Name(), rt.String()
		if rt.Kind() == reflect.Pointer {
			base, name = rt.Elem().Name(), rt.Elem().Name()
			if rv.IsNil() {
				name = "(*" + base + ")(nil)"
			}
		}
		for i := 0; i < rv.NumMethod(); i++ {
			m := rt.Method(i)
			if skipped[base+"."+m.Name] {
				continue
			}
			if rt.Kind() == reflect.Pointer && rv.IsNil() && isValueMethod(rt.Elem(), m.Name) {
				continue // the runtime panics before the method runs
			}
			fn := rv.Method(i)
			args := make([]reflect.Value, fn.Type().NumIn())
			if fn.Type().IsVariadic() {
				args = args[:len(args)-1]
			}
			for j := range args {
				args[j] = reflect.Zero(fn.Type().In(j))
			}
			done := make(chan string, 1)
			go func() {
				defer func() {
					if r := recover(); r != nil {
						done <- fmt.Sprint(r)
						return
					}
					done <- ""
				}()
				// A zero value may work (the zero umad.Host opens
				// the running system's ports): close what it opened.
				for _, out := range fn.Call(args) {
					if c, ok := out.Interface().(io.Closer); ok && !isNil(out) {
						c.Close()
					}
				}
			}()
			select {
			case p := <-done:
				if p != "" {
					t.Errorf("%s.%s with zero arguments panicked: %s", name, m.Name, p)
				}
			case <-time.After(hang):
				t.Errorf("%s.%s with zero arguments has not returned after %v (a hang)", name, m.Name, hang)
			}
		}
	}
}

// hang is how long a call may take before it counts as hung: generous,
// since the zero values of some types read the running system (netlink,
// sysfs), which takes seconds in a VM under TCG on a loaded host; a test
// must not fail on speed.
const hang = 30 * time.Second

func isValueMethod(t reflect.Type, name string) bool {
	_, ok := t.MethodByName(name)
	return ok
}

func isNil(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// NilEINVAL calls every exported method of each nil pointer in vals (such
// as (*T)(nil)) with zero arguments and fails t when one panics, or when
// one that returns an error returns one that does not match EINVAL
// (syscall.EINVAL through errors.Is): the rule that a nil receiver is an
// invalid argument, answered as one. Methods without an error result must
// only not panic (they answer zero values). Methods named in skip
// ("T.Method") are left out; give the reason next to the list.
func NilEINVAL(t *testing.T, skip []string, vals ...any) {
	t.Helper()
	skipped := map[string]bool{}
	for _, s := range skip {
		skipped[s] = true
	}
	errType := reflect.TypeFor[error]()
	for _, v := range vals {
		rv := reflect.ValueOf(v)
		rt := rv.Type()
		if rt.Kind() != reflect.Pointer || !rv.IsNil() {
			t.Fatalf("NilEINVAL: %v is not a nil pointer", rt)
		}
		base := rt.Elem().Name()
		for i := 0; i < rv.NumMethod(); i++ {
			m := rt.Method(i)
			if skipped[base+"."+m.Name] {
				continue
			}
			name := "(*" + base + ")(nil)." + m.Name
			if isValueMethod(rt.Elem(), m.Name) {
				t.Errorf("%s has a value receiver: a nil pointer panics before it runs", name)
				continue
			}
			fn := rv.Method(i)
			ft := fn.Type()
			args := make([]reflect.Value, ft.NumIn())
			if ft.IsVariadic() {
				args = args[:len(args)-1]
			}
			for j := range args {
				args[j] = reflect.Zero(ft.In(j))
			}
			var outs []reflect.Value
			panicked := func() (p any) {
				defer func() { p = recover() }()
				outs = fn.Call(args)
				return nil
			}()
			if panicked != nil {
				t.Errorf("%s panicked: %v", name, panicked)
				continue
			}
			for j, out := range outs {
				if ft.Out(j) != errType {
					if c, ok := out.Interface().(io.Closer); ok && !isNil(out) {
						c.Close()
					}
					continue
				}
				err, _ := out.Interface().(error)
				if !errors.Is(err, syscall.EINVAL) {
					t.Errorf("%s = %v, want an error matching EINVAL", name, err)
				}
			}
		}
	}
}
