// Package cli holds what the tools of cmd/purerdma share: the one
// command-line parser (getopt_long's rules, as rdma-core's tools parse
// their options), C's number parsing, errno texts and exit statuses, and
// the Tool type the families register.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/purerdma/rdma/internal/errs"
)

var (
	// ErrUsage is an option's argument the tool refuses: the caller
	// prints its usage.
	ErrUsage = errors.New("usage")
	// ErrHelp is -h or --help: the caller prints its help.
	ErrHelp = errors.New("help")
	// ErrGetopt is a command line getopt refuses (reported already).
	ErrGetopt = GetoptError("bad option")
)

// Option is one option: a short letter (0 for none), a long name,
// whether it takes an argument, and what to do with it.
type Option struct {
	Short byte               // the letter after '-', 0 for none
	Long  string             // the name after "--", "" for none
	Arg   bool               // whether the option takes an argument
	Set   func(string) error // called with the argument ("" for none)
}

// Getopt parses args the way glibc's getopt_long does with an optstring
// like "d:i:lv": short options may be grouped (-vl) and take their argument
// attached (-drxe0) or as the next word; long options take it after '=' or
// as the next word and may be abbreviated to a unique prefix; "--" ends the
// options; other words are skipped (GetoptOperands returns them). Errors
// are reported on stderr with getopt's messages.
func Getopt(prog string, args []string, opts []Option, stderr io.Writer) error {
	_, err := GetoptOperands(prog, args, opts, stderr)
	return err
}

// GetoptOperands is Getopt that returns the operands too: the words that
// are neither options nor their arguments ("-" among them), in order, then
// every word after "--", as glibc's getopt_long leaves them from optind
// on after permuting them to the end.
func GetoptOperands(prog string, args []string, opts []Option, stderr io.Writer) ([]string, error) {
	var operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(operands, args[i+1:]...), nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			o, matches := lookupLong(opts, name)
			switch {
			case o == nil && len(matches) == 0:
				fmt.Fprintf(stderr, "%s: unrecognized option '%s'\n", prog, a)
				return nil, GetoptError("unrecognized option")
			case o == nil:
				fmt.Fprintf(stderr, "%s: option '--%s' is ambiguous; possibilities:", prog, name)
				for _, m := range matches {
					fmt.Fprintf(stderr, " '--%s'", m.Long)
				}
				fmt.Fprintln(stderr)
				return nil, GetoptError("option is ambiguous")
			}
			if o.Arg && !hasVal {
				if i+1 >= len(args) {
					fmt.Fprintf(stderr, "%s: option '--%s' requires an argument\n", prog, o.Long)
					return nil, ErrGetopt
				}
				i++
				val = args[i]
			} else if !o.Arg && hasVal {
				fmt.Fprintf(stderr, "%s: option '--%s' doesn't allow an argument\n", prog, o.Long)
				return nil, ErrGetopt
			}
			if err := o.Set(val); err != nil {
				return nil, err
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				o := lookupShort(opts, a[j])
				if o == nil {
					fmt.Fprintf(stderr, "%s: invalid option -- '%c'\n", prog, a[j])
					return nil, ErrGetopt
				}
				if !o.Arg {
					if err := o.Set(""); err != nil {
						return nil, err
					}
					continue
				}
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						fmt.Fprintf(stderr, "%s: option requires an argument -- '%c'\n", prog, a[j])
						return nil, ErrGetopt
					}
					i++
					val = args[i]
				}
				if err := o.Set(val); err != nil {
					return nil, err
				}
				break
			}
		default:
			operands = append(operands, a)
		}
	}
	return operands, nil
}

// GetoptError is a command line the parser (or an option's Set) refuses,
// already reported on stderr.
type GetoptError string

func (e GetoptError) Error() string { return string(e) }

// lookupLong finds the option a long name (or a prefix of one) names: an
// exact match, else the only option it is a prefix of, else none, with
// the options it is a prefix of when it is ambiguous (glibc's
// process_long_option: a prefix of options that do the same, the same
// short letter with the same Arg, is no ambiguity, the first one wins).
func lookupLong(opts []Option, name string) (*Option, []*Option) {
	var matches []*Option
	for i := range opts {
		o := &opts[i]
		if o.Long == "" {
			continue
		}
		if o.Long == name {
			return o, nil
		}
		if strings.HasPrefix(o.Long, name) && name != "" {
			matches = append(matches, o)
		}
	}
	if len(matches) == 0 {
		return nil, nil
	}
	for _, m := range matches[1:] {
		if m.Short == 0 || m.Short != matches[0].Short || m.Arg != matches[0].Arg {
			return nil, matches
		}
	}
	return matches[0], nil
}

func lookupShort(opts []Option, c byte) *Option {
	for i := range opts {
		if opts[i].Short == c && c != 0 {
			return &opts[i]
		}
	}
	return nil
}

// CStrtol is strtol(s, NULL, 0) clamped to int64: leading blanks, a sign,
// then 0x for hex or 0 for octal; parsing stops at the first invalid
// character, and no digits give 0.
func CStrtol(s string) int64 {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	base := int64(10)
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && hexDigit(s[2]) >= 0:
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base = 8
	}
	var v int64
	for i := 0; i < len(s); i++ {
		d := hexDigit(s[i])
		if d < 0 || int64(d) >= base {
			break
		}
		if v > (1<<62)/base {
			v = 1<<63 - 1
			break
		}
		v = v*base + int64(d)
	}
	if neg {
		return -v
	}
	return v
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// ErrnoCode is the return code rdma-core's tools give for a failed verb:
// the errno, or 1 when there is none.
func ErrnoCode(err error) int {
	if n := errs.Errno(err); n != 0 {
		return int(n)
	}
	return 1
}
