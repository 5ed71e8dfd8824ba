package umad

import (
	"errors"
	"fmt"
	"reflect"
	"syscall"
	"testing"
)

// TestNilReceivers: every exported method of every type of the package
// that has pointer methods answers a nil receiver without panicking: an
// *Error wrapping EINVAL where it returns an error, zero values otherwise
// (Append appends nothing; FD is -1, no descriptor). Close too answers
// EINVAL, as uverbs', counters', flow's and rdmacm's do. The methods
// are found by reflection, so a new one is checked as soon as it exists.
// Methods promoted from sysfs' records (CA, CAPort embed sysfs.CA and
// sysfs.Port by value) are sysfs' and left out: Go dereferences the nil
// pointer to reach the embedded value before they run.
func TestNilReceivers(t *testing.T) {
	nonZero := map[string]any{"Port.FD": -1}
	skip := map[string]string{
		"Packet.Format": "called with a fmt.State below",
	}
	methods := 0
	for _, v := range []any{
		(*Host)(nil), (*Port)(nil), (*Packet)(nil), (*CA)(nil), (*CAPort)(nil), (*Registration)(nil),
		(*Addr)(nil), (*GRH)(nil),
		(*MADHeader)(nil), (*MADDecoder)(nil), (*SMP)(nil), (*PerfMAD)(nil), (*VendorMAD)(nil), (*RawMAD)(nil),
		(*RMPPHeader)(nil), (*NodeInfo)(nil), (*NodeDescription)(nil), (*PortInfo)(nil), (*ClassPortInfo)(nil),
		(*PortCounters)(nil), (*PortCountersExtended)(nil),
	} {
		rv := reflect.ValueOf(v)
		pt := rv.Type()
		for i := 0; i < pt.NumMethod(); i++ {
			m := pt.Method(i)
			name := pt.Elem().Name() + "." + m.Name
			if _, ok := pt.Elem().MethodByName(m.Name); ok {
				continue // a value method (or one promoted from an embedded value): Go dereferences first
			}
			if skip[name] != "" || promoted(pt.Elem(), m.Name) {
				continue
			}
			methods++
			fn := rv.Method(i)
			args := make([]reflect.Value, fn.Type().NumIn())
			if fn.Type().IsVariadic() {
				args = args[:len(args)-1]
			}
			for j := range args {
				args[j] = reflect.Zero(fn.Type().In(j))
			}
			var out []reflect.Value
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s on a nil receiver panicked: %v", name, r)
					}
				}()
				out = fn.Call(args)
			}()
			for k, o := range out {
				if o.Type() == reflect.TypeFor[error]() {
					err, _ := o.Interface().(error)
					var e *Error
					if !errors.Is(err, syscall.EINVAL) || !errors.As(err, &e) {
						t.Errorf("%s on a nil receiver: error %v, want an *Error wrapping EINVAL", name, err)
					}
					continue
				}
				want, ok := nonZero[name]
				if !ok {
					if !o.IsZero() {
						t.Errorf("%s on a nil receiver: result %d is %v, want the zero value", name, k, o)
					}
					continue
				}
				if o.Interface() != want {
					t.Errorf("%s on a nil receiver: result %d is %v, want %v", name, k, o, want)
				}
			}
		}
	}
	if methods < 100 {
		t.Errorf("%d methods checked; the table has lost types", methods)
	}
	if s := fmt.Sprintf("%v %+v", (*Packet)(nil), (*Packet)(nil)); s != "<nil> <nil>" {
		t.Errorf("Packet.Format of nil: %q", s)
	}
}

// promoted reports whether the method name of *t comes from a field t
// embeds.
func promoted(t reflect.Type, name string) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.Anonymous {
			if _, ok := reflect.PointerTo(f.Type).MethodByName(name); ok {
				return true
			}
		}
	}
	return false
}
