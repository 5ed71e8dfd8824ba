package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

func init() {
	register("version", "print the purerdma version and the Go toolchain", func(args []string, stdout, stderr io.Writer) error {
		for _, a := range args {
			if a == "-h" || a == "--help" {
				fmt.Fprint(stdout, versionUsage)
				return nil
			}
			fmt.Fprintf(stderr, "version: unknown argument %s\n%s", a, versionUsage)
			return exitError{2}
		}
		v := "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
		fmt.Fprintf(stdout, "purerdma %s %s %s/%s\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return nil
	})
}

const versionUsage = `Usage: purerdma version

Prints the module version purerdma was built from ("(devel)" in a
working tree), the Go toolchain, and the platform. It takes no arguments.
`
