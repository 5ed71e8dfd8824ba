package main

// link add / link delete: iproute2's `rdma link add NAME type TYPE netdev
// NETDEV` and `rdma link delete NAME` (rdma/link.c, iproute2 6.1) through
// RDMA netlink (sysfs.Netlink.LinkAdd, LinkDelete), with its messages and
// exit statuses.

import (
	"fmt"
	"io"

	"github.com/purerdma/rdma/sysfs"
)

func init() {
	register("link", "add or delete a software RDMA device, like iproute2's rdma link add NAME type rxe netdev DEV / rdma link delete NAME", runLink)
}

// linkNetlink is how link talks to the kernel (tests: a fake).
var linkNetlink interface {
	Devices() ([]sysfs.NetlinkDevice, error)
	LinkAdd(name, linkType, netdev string) error
	LinkDelete(devIndex uint32) error
} = sysfs.NewNetlink()

// linkUsage is rdma's link_help, which it prints on standard output.
const linkUsage = `Usage: rdma link show [DEV/PORT_INDEX]
Usage: rdma link add NAME type TYPE netdev NETDEV
Usage: rdma link delete NAME
`

// linkKernelErr is how rdma reports an errno from the kernel:
// "error: " and strerror, exit status 1.
func linkKernelErr(stderr io.Writer, err error) error {
	fmt.Fprintf(stderr, "error: %s\n", strerror(errnoOf(err)))
	return exitError{1}
}

func runLink(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, linkUsage)
		return nil
	}
	switch args[0] {
	case "add":
		return linkAdd(args[1:], stdout, stderr)
	case "delete", "del":
		return linkDelete(args[1:], stderr)
	}
	fmt.Fprintf(stderr, "Unknown parameter '%s'.\n", args[0])
	return nil // rdma 6.1 exits 0 here
}

// linkAdd: NAME, then the keywords "type" and "netdev" with their values
// in that order, as link_add's parsers take them; anything else prints the
// usage (and rdma exits 0).
func linkAdd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "Please provide a link name to add.")
		return exitError{1}
	}
	if len(args) != 5 || args[1] != "type" || args[3] != "netdev" {
		fmt.Fprint(stdout, linkUsage)
		return nil
	}
	if err := linkNetlink.LinkAdd(args[0], args[2], args[4]); err != nil {
		return linkKernelErr(stderr, err)
	}
	return nil
}

func linkDelete(args []string, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "Please provide device name.")
		return exitError{1}
	}
	devs, err := linkNetlink.Devices()
	if err != nil {
		return linkKernelErr(stderr, err)
	}
	for _, d := range devs {
		if d.Name == args[0] {
			if err := linkNetlink.LinkDelete(d.Index); err != nil {
				return linkKernelErr(stderr, err)
			}
			return nil
		}
	}
	fmt.Fprintf(stderr, "Wrong device name - %s\n", args[0])
	return exitError{1}
}
