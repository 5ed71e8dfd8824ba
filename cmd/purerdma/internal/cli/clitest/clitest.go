// Package clitest runs purerdma's tools in tests: a tool's outputs and
// exit status, as the command would give them.
package clitest

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
)

// Run runs the tool named args[0] among tools with args[1:] and returns
// what it wrote and its exit status: 0, a cli.ExitError's status, -1 for
// another error, 127 for no such tool.
func Run(tools []cli.Tool, args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	for _, t := range tools {
		if len(args) > 0 && t.Name == args[0] {
			return Code(t.Run(args[1:], &out, &errb), &out, &errb)
		}
	}
	return "", "", 127
}

// Code is Run's answer for what a tool returned and wrote.
func Code(err error, out, errb *bytes.Buffer) (stdout, stderr string, code int) {
	if err != nil {
		code = -1
		var ee cli.ExitError
		if errors.As(err, &ee) {
			code = ee.Code
		}
	}
	return out.String(), errb.String(), code
}

// Main runs argv as purerdma would among tools: `TOOL ARGS...` through a
// link named TOOL (argv[0]'s base name), else `purerdma TOOL ARGS...`. It
// returns the tool's error; no such tool is an ExitError of status 2, as
// purerdma's.
func Main(tools []cli.Tool, argv []string, stdout, stderr io.Writer) error {
	if len(argv) > 0 && filepath.Base(argv[0]) != "purerdma" {
		for _, t := range tools {
			if t.Name == filepath.Base(argv[0]) {
				return t.Run(argv[1:], stdout, stderr)
			}
		}
	}
	if len(argv) > 1 {
		for _, t := range tools {
			if t.Name == argv[1] {
				return t.Run(argv[2:], stdout, stderr)
			}
		}
	}
	return cli.ExitError{Code: 2}
}
