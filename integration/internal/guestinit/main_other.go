//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "guestinit is the init of vmrun's Linux guest; it does nothing on this system")
	os.Exit(1)
}
