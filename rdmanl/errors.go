package rdmanl

import (
	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/internal/errs/model"
	"github.com/purerdma/rdma/sysfs"
)

// netlinkRDMA is NETLINK_RDMA (include/uapi/linux/netlink.h), the protocol
// of the RDMA netlink socket; package syscall predates it.
const netlinkRDMA = 20

// ErrNotSupported is the library-wide "not supported" sentinel (see
// [rdma.ErrNotSupported]): the kernel has no RDMA netlink (ib_core is not
// loaded), or the request is one it does not know.
var ErrNotSupported error = &model.NotSupportedValue

// Error is purerdma's one error type (rdma.Error): the operation, the
// device ("index 3", "index 3/1" for a port, or a name) and the cause.
// Match it with errors.As and its cause with errors.Is (the errno the
// kernel answered, os.ErrNotExist, ErrNotSupported, os.ErrClosed).
type Error = rdma.Error

// ParseError says that a reply did not have the expected format: Path
// names the netlink attribute (RDMA_NLDEV_ATTR_...), Text holds its bytes
// in hex. It is the sysfs package's type (the two sources describe the same
// devices).
type ParseError = sysfs.ParseError

// parseErr builds a ParseError, shortening text.
func parseErr(attr, text, want string) *ParseError {
	const max = 64
	if len(text) > max {
		text = text[:max] + "…"
	}
	return &ParseError{Path: attr, Text: text, Want: want}
}
