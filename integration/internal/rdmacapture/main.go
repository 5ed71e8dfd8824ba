// Command rdmacapture runs a program under ptrace and writes down the exact
// bytes of every request it makes on /dev/infiniband/* (uverbs and umad):
// ioctl, write and read. It is built into vmrun's guest image as
// /usr/local/bin/rdmacapture, for golden tests of the project's encoders:
//
//	go run ./integration/vmrun -- rdmacapture -o integration/testdata/captures/X.txt -- ibv_devinfo -d rxe0
//
// strace cannot do this: it prints RDMA_VERBS_IOCTL's argument only as a
// pointer, and rdma-core issues nearly every verb through that ioctl. For an
// RDMA_VERBS_IOCTL call the capture holds the ib_uverbs_ioctl_hdr and its
// attributes, decoded and raw (with pointer values zeroed, as they change
// from run to run), and for each attribute that points to a buffer the
// buffer's bytes at entry ("in") and, when the kernel marked it written
// (UVERBS_ATTR_F_VALID_OUTPUT), at exit ("out"). Other ioctls get the
// _IOC_SIZE bytes at their argument; write and read get their buffers.
//
// Every thread of the traced program and every child it forks are followed
// (PTRACE_O_TRACECLONE, TRACEFORK, TRACEVFORK); it runs on amd64 and arm64.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	var status exitStatus
	switch {
	case err == nil:
	case errors.As(err, &status):
		os.Exit(int(status))
	default:
		fmt.Fprintf(os.Stderr, "rdmacapture: %v\n", err)
		os.Exit(2)
	}
}

// exitStatus is the traced program's non-zero exit status.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rdmacapture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "write the capture to this file (default: standard error)")
	note := fs.String("note", "", "a line for the capture's header, e.g. the command that made it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rdmacapture [-o FILE] [-note TEXT] -- PROGRAM [ARGS...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("no PROGRAM given")
	}
	w := stderr
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	fmt.Fprintf(w, "# rdmacapture: requests on /dev/infiniband/* made by: %s\n", strings.Join(fs.Args(), " "))
	if *note != "" {
		fmt.Fprintf(w, "# %s\n", *note)
	}
	if rel, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		fmt.Fprintf(w, "# kernel: %s\n", strings.TrimSpace(string(rel)))
	}
	fmt.Fprint(w, header)
	return trace(fs.Args(), stdout, stderr, w)
}

const header = `# Format: one block per system call, in order.
#   ioctl DEV REQUEST = RET        REQUEST in hex, RET the raw return value
#     hdr ...                      RDMA_VERBS_IOCTL: struct ib_uverbs_ioctl_hdr
#     attr ...                     one struct ib_uverbs_attr; data=ptr when it points to a buffer
#       in HEX / out HEX           that buffer at entry / at exit (if the kernel wrote it)
#     raw HEX                      hdr and attrs as passed, pointer values zeroed
#     in HEX / out HEX             other ioctls: the _IOC_SIZE bytes at the argument
#   write DEV COUNT = RET / read DEV COUNT = RET, then in HEX / out HEX
`
