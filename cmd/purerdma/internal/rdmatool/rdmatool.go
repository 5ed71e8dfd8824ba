// Package rdmatool holds purerdma's tools of iproute2's rdma family: link,
// resource and statistic, through RDMA netlink, with rdma's texts, JSON
// and exit statuses.
package rdmatool

import (
	"fmt"
	"io"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/rdmanl"
)

// Env is what the rdma tools reach the system through. DefaultEnv is the
// running system; tests pass doubles.
type Env struct {
	Link      LinkNetlink     // link's requests
	Resource  ResourceNetlink // resource's requests
	Statistic StatNetlink     // statistic's requests
	// Comm reads a process's name (its /proc/PID/comm's first word);
	// false where there is none.
	Comm func(pid uint32) (string, bool)
}

// DefaultEnv is the running system's RDMA netlink and /proc.
func DefaultEnv() *Env {
	return &Env{Link: rdmanl.New(), Resource: rdmanl.New(), Statistic: rdmanl.New(), Comm: procComm}
}

// Tools are the family's tools, bound to env.
func Tools(env *Env) []cli.Tool { return cli.BindAll(tools[:], env) }

// Tool is the family's tool called name, bound to env.
func Tool(env *Env, name string) (cli.Tool, bool) { return cli.Find(tools[:], env, name) }

// tools are the family's tools, in the order they are listed.
var tools = [...]cli.Entry[*Env]{
	{Name: "link", Batch: true, Run: (*Env).runLink,
		Summary: "show ports, add or delete a software RDMA device, like iproute2's rdma link [-j] show / add NAME type rxe netdev DEV / delete NAME"},
	{Name: "resource", Batch: true, Run: (*Env).runResource,
		Summary: "tracked objects (pd, cq, qp, cm_id, mr, ctx) per device and process, like iproute2's rdma resource show (-j too)"},
	{Name: "statistic", Run: (*Env).runStatistic,
		Summary: "port and QP counter statistics over RDMA netlink, like iproute2's rdma statistic [show [link DEV/PORT]] / qp show [link DEV/PORT] / qp mode [link DEV/PORT]"},
}

// keepSocket returns nl, or, where nl is the running system's client (a
// *rdmanl.Conn, not a test's fake), one that sends all of this run's
// requests on one socket (rdmanl.Open) where nl opens one a request,
// with the func that closes it.
func keepSocket[T any](nl T) (T, func()) {
	if _, ok := any(nl).(*rdmanl.Conn); !ok {
		return nl, func() {}
	}
	k, err := rdmanl.Open()
	if err != nil {
		return nl, func() {} // the requests fail as they would have
	}
	t, ok := any(k).(T)
	if !ok {
		k.Close()
		return nl, func() {}
	}
	return t, func() { k.Close() }
}

// kernelErr is how rdma reports an errno from the kernel:
// "error: " and strerror, exit status 1.
func kernelErr(stderr io.Writer, err error) error {
	fmt.Fprintf(stderr, "error: %s\n", cli.Strerror(cli.ErrnoOf(err)))
	return cli.ExitError{Code: 1}
}
