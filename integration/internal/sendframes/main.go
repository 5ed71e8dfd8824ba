// Command sendframes sends Ethernet frames from veth0 to the test device
// mock0's port (veth1) in the vmrun guest, and returns once mock0 has seen
// them all: what make demo uses to show flowcount counting real frames.
//
//	sendframes -dst 52:54:00:12:34:02 -n 20 -size 100
package main

import (
	"flag"
	"fmt"
	"net"
	"os"

	"github.com/purerdma/rdma/integration/vmtest"
)

func main() {
	dst := flag.String("dst", vmtest.MAC1, "destination MAC")
	src := flag.String("src", "", "source MAC (default: veth0's)")
	n := flag.Int("n", 1, "how many frames")
	size := flag.Int("size", 100, "frame size in bytes, destination MAC to the end of the payload")
	flag.Parse()
	f := &vmtest.Frame{Len: *size}
	mac, err := net.ParseMAC(*dst)
	if err != nil || len(mac) != 6 || *size < 60 || *n < 0 {
		fmt.Fprintln(os.Stderr, "sendframes: want -dst MAC, -n >= 0, -size >= 60")
		os.Exit(2)
	}
	copy(f.Dst[:], mac)
	if *src != "" {
		if f.Src, err = net.ParseMAC(*src); err != nil || len(f.Src) != 6 {
			fmt.Fprintln(os.Stderr, "sendframes: bad -src")
			os.Exit(2)
		}
	}
	if err := vmtest.Send(*n, f); err != nil {
		fmt.Fprintln(os.Stderr, "sendframes:", err)
		os.Exit(1)
	}
	fmt.Printf("sent %d frames of %d bytes to %s on %s\n", *n, *size, mac, vmtest.Net0)
}
