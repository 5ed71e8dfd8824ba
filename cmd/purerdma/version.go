package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
)

// runVersion is `purerdma version`.
func runVersion(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		if a := args[0]; a == "-h" || a == "--help" {
			fmt.Fprint(stdout, versionUsage)
			return nil
		}
		fmt.Fprintf(stderr, "version: unknown argument %s\n%s", args[0], versionUsage)
		return cli.ExitError{Code: 2}
	}
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	fmt.Fprintf(stdout, "purerdma %s %s %s/%s\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}

const versionUsage = `Usage: purerdma version

Prints the module version purerdma was built from ("(devel)" in a
working tree), the Go toolchain, and the platform. It takes no arguments.
`
