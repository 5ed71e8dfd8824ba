package cli

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// Getopt follows getopt_long: grouped short flags, an argument attached or
// in the next word, --name=value or --name value, unique prefixes of long
// names, operands permuted out, and "--" ending the options.
func TestGetoptOperands(t *testing.T) {
	type got struct {
		v, d    bool
		port, n string
	}
	for _, tc := range []struct {
		args     []string
		want     got
		operands []string
	}{
		{[]string{"-vd", "-p", "7", "host"}, got{v: true, d: true, port: "7"}, []string{"host"}},
		{[]string{"-vp7", "a", "-n", "3", "b"}, got{v: true, port: "7", n: "3"}, []string{"a", "b"}},
		{[]string{"--port=9", "--ver", "--iters", "5"}, got{v: true, port: "9", n: "5"}, nil},
		{[]string{"-", "--", "-v", "--port=1"}, got{}, []string{"-", "-v", "--port=1"}},
	} {
		var g got
		opts := []Option{
			{Short: 'v', Long: "verbose", Set: func(string) error { g.v = true; return nil }},
			{Short: 'd', Set: func(string) error { g.d = true; return nil }},
			{Short: 'p', Long: "port", Arg: true, Set: func(v string) error { g.port = v; return nil }},
			{Short: 'n', Long: "iters", Arg: true, Set: func(v string) error { g.n = v; return nil }},
		}
		var errb bytes.Buffer
		ops, err := GetoptOperands("t", tc.args, opts, &errb)
		if err != nil || g != tc.want || !reflect.DeepEqual(ops, tc.operands) || errb.Len() != 0 {
			t.Errorf("%q: %+v %q %v %q; want %+v %q", tc.args, g, ops, err, errb.String(), tc.want, tc.operands)
		}
	}
}

// Its refusals are glibc's messages, on stderr, and a GetoptError.
func TestGetoptErrors(t *testing.T) {
	opts := []Option{
		{Short: 'p', Long: "port", Arg: true, Set: func(string) error { return nil }},
		{Long: "pkey", Arg: true, Set: func(string) error { return nil }},
		{Short: 'v', Long: "verbose", Set: func(string) error { return nil }},
		{Short: 'h', Set: func(string) error { return ErrHelp }},
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-x"}, "t: invalid option -- 'x'\n"},
		{[]string{"-p"}, "t: option requires an argument -- 'p'\n"},
		{[]string{"--port"}, "t: option '--port' requires an argument\n"},
		{[]string{"--verbose=1"}, "t: option '--verbose' doesn't allow an argument\n"},
		{[]string{"--nope"}, "t: unrecognized option '--nope'\n"},
		{[]string{"--nope=1"}, "t: unrecognized option '--nope=1'\n"},
		{[]string{"--p", "1"}, "t: option '--p' is ambiguous; possibilities: '--port' '--pkey'\n"},
	} {
		var errb bytes.Buffer
		_, err := GetoptOperands("t", tc.args, opts, &errb)
		var ge GetoptError
		if !errors.As(err, &ge) || errb.String() != tc.msg {
			t.Errorf("%q: %v, stderr %q; want %q", tc.args, err, errb.String(), tc.msg)
		}
	}
	if _, err := GetoptOperands("t", []string{"-vh"}, opts, new(bytes.Buffer)); !errors.Is(err, ErrHelp) {
		t.Errorf("-vh: %v, want ErrHelp from Set", err)
	}
}
