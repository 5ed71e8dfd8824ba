package sysfs

import (
	"errors"
	"fmt"
	"reflect"
	"syscall"
	"testing"
)

// nilMethods calls every exported method of each nil pointer in vals with
// zero arguments: none may panic, and a method that returns an error
// returns one matching EINVAL (an invalid receiver), except
// Unwrap (a nil error wraps nothing) and those in skip.
func nilMethods(t *testing.T, skip map[string]bool, vals ...any) {
	t.Helper()
	errType := reflect.TypeOf((*error)(nil)).Elem()
	for _, v := range vals {
		rv := reflect.ValueOf(v)
		rt := rv.Type()
		if rt.Kind() != reflect.Pointer || !rv.IsNil() {
			t.Fatalf("%T: want a nil pointer", v)
		}
		for i := 0; i < rt.NumMethod(); i++ {
			m := rt.Method(i)
			if _, ok := rt.Elem().MethodByName(m.Name); ok {
				continue // a value method: the runtime panics before it runs
			}
			if skip[rt.Elem().Name()+"."+m.Name] {
				continue
			}
			name := fmt.Sprintf("(%s)(nil).%s", rt, m.Name)
			fn := rv.Method(i)
			ft := fn.Type()
			args := make([]reflect.Value, ft.NumIn())
			if ft.IsVariadic() {
				args = args[:len(args)-1]
			}
			for j := range args {
				args[j] = reflect.Zero(ft.In(j))
			}
			var out []reflect.Value
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s panicked: %v", name, r)
					}
				}()
				out = fn.Call(args)
			}()
			if len(out) == 0 || ft.Out(ft.NumOut()-1) != errType || m.Name == "Unwrap" {
				continue
			}
			err, _ := out[len(out)-1].Interface().(error)
			if err == nil || !errors.Is(err, syscall.EINVAL) {
				t.Errorf("%s = %v, want an error matching EINVAL", name, err)
			}
		}
	}
}

// TestNilReceivers: the data types' methods on a nil pointer answer EINVAL
// (or a zero value where they return no error) instead of panicking. A nil
// *FS is not among them: it reads the running system (TestZeroValues).
func TestNilReceivers(t *testing.T) {
	// UmadRate and UmadLinkLayer move to package umad (issue 26).
	nilMethods(t, map[string]bool{"Port.UmadRate": true, "Port.UmadLinkLayer": true}, (*CA)(nil), (*Port)(nil), (*HwCounterSet)(nil), (*CounterSet)(nil),
		(*PortStatusReader)(nil), (*CAWatch)(nil), (*ParseError)(nil), (*DanglingLinkError)(nil))
}
