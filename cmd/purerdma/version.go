package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

func init() {
	register("version", "print the purerdma version and the Go toolchain", func(args []string, stdout, stderr io.Writer) error {
		v := "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
		fmt.Fprintf(stdout, "purerdma %s %s %s/%s\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return nil
	})
}
