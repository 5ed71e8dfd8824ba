package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
)

// A Tool is one subcommand of purerdma. Run gets the arguments after the
// tool's name; the doubles a test injects are bound into Run by the
// family's Tools function, never kept in package variables.
type Tool struct {
	Name    string
	Summary string
	// Batch tools print a report and exit: purerdma buffers their
	// standard output and writes it once at the end. Tools that stream
	// write as they go.
	Batch bool
	Run   func(args []string, stdout, stderr io.Writer) error
}

// ExitError carries a specific exit status without a message of its own
// (the tool already printed what the user needs).
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Strerror is glibc's strerror text for errno: Go's syscall table holds
// the same messages with the first letter lowered (zerrors_linux_*.go is
// generated from them).
func Strerror(errno syscall.Errno) string {
	if errno == 0 {
		return "Success"
	}
	msg := errno.Error()
	if msg == "" || strings.HasPrefix(msg, "errno ") {
		return fmt.Sprintf("Unknown error %d", int(errno))
	}
	return strings.ToUpper(msg[:1]) + msg[1:]
}

// ErrnoOf is the errno an error carries, EIO when it carries none.
func ErrnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EIO
}

// Atoi is C's atoi on the text after DEV/: an optional sign and the
// leading digits, 0 when there are none.
func Atoi(s string) int64 {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	var v int64
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9' && v < 1<<40; i++ {
		v = v*10 + int64(s[i]-'0')
	}
	if neg {
		return -v
	}
	return v
}

// Entry is a tool in a family's static table: what Tool holds, with Run
// taking the family's environment, which binding supplies. A table of
// Entries is data in the binary; a run binds the one tool it starts
// (Find) rather than a slice of every tool (BindAll), a heap size class
// of its own (docs/performance.md, "Per tool").
type Entry[E any] struct {
	Name    string
	Summary string
	Batch   bool
	Run     func(env E, args []string, stdout, stderr io.Writer) error
}

// Bind is the tool with env.
func (t *Entry[E]) Bind(env E) Tool {
	run := t.Run
	return Tool{Name: t.Name, Summary: t.Summary, Batch: t.Batch,
		Run: func(args []string, stdout, stderr io.Writer) error { return run(env, args, stdout, stderr) }}
}

// BindAll is every tool of table, bound to env.
func BindAll[E any](table []Entry[E], env E) []Tool {
	tools := make([]Tool, len(table))
	for i := range table {
		tools[i] = table[i].Bind(env)
	}
	return tools
}

// Find is table's tool called name, bound to env.
func Find[E any](table []Entry[E], env E, name string) (Tool, bool) {
	for i := range table {
		if table[i].Name == name {
			return table[i].Bind(env), true
		}
	}
	return Tool{}, false
}
