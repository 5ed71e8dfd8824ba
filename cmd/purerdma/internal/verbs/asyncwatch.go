package verbs

// asyncwatch: rdma-core's ibv_asyncwatch (libibverbs/examples/asyncwatch.c,
// rdma-core 44) through uverbs.Context.AsyncEvent: the device's async
// events, one line each, until SIGINT or SIGTERM, which end it cleanly
// (exit 0, the context closed) where the C tool dies of the signal.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/uverbs"
)

// signalContext is what stops asyncwatch: SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// asyncwatchUsage is ibv_asyncwatch's usage(), printed on standard output.
const asyncwatchUsage = `Usage:
  %s            start an asyncwatch process

Options:
  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)
  -h, --help             print a help text and exit
`

// asyncwatchName is event_name_str: the name of the events the example
// expects (device and port events), "unexpected" for the others.
func asyncwatchName(t uverbs.EventType) string {
	switch t {
	case uverbs.EventDeviceFatal, uverbs.EventPortActive, uverbs.EventPortErr, uverbs.EventLIDChange,
		uverbs.EventPKeyChange, uverbs.EventSMChange, uverbs.EventClientReregister, uverbs.EventGIDChange:
		return "IBV_EVENT_" + t.String()
	}
	return "unexpected"
}

func (env *Env) runAsyncwatch(args []string, stdout, stderr io.Writer) error {
	const prog = "ibv_asyncwatch"
	var devName string
	haveDev := false
	opts := []cli.Option{
		{Short: 'd', Long: "ib-dev", Arg: true, Set: func(v string) error { devName, haveDev = v, true; return nil }},
		{Short: 'h', Long: "help", Set: func(string) error { return cli.ErrHelp }},
	}
	if err := cli.Getopt(prog, args, opts, stderr); err != nil {
		fmt.Fprintf(stdout, asyncwatchUsage, prog)
		if errors.Is(err, cli.ErrHelp) {
			return nil
		}
		return cli.ExitError{Code: 1}
	}
	devs, err := uverbs.Devices(env.Uverbs)
	if err != nil {
		fmt.Fprintf(stderr, "Failed to get IB devices list: %v\n", err)
		return cli.ExitError{Code: 1}
	}
	i := 0
	if haveDev {
		for i < len(devs) && devs[i].Name != devName {
			i++
		}
	}
	if i >= len(devs) {
		fmt.Fprintf(stderr, "IB device %s not found\n", devName)
		return cli.ExitError{Code: 1}
	}
	c, err := uverbs.OpenDevice(devs[i], env.Uverbs)
	if err != nil {
		fmt.Fprintf(stderr, "Couldn't get context for %s\n", devs[i].Name)
		return cli.ExitError{Code: 1}
	}
	defer c.Close()
	fmt.Fprintf(stdout, "%s: async event FD %d\n", devs[i].Name, c.AsyncEventFD())
	ctx, stop := env.AsyncContext()
	defer stop()
	for {
		e, err := c.AsyncEvent(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // SIGINT or SIGTERM: done
			}
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			return cli.ExitError{Code: 1}
		}
		// The C tool prints element.port_num for every event; for a CQ,
		// QP, SRQ or WQ event that union holds a pointer, here the
		// object's handle.
		fmt.Fprintf(stdout, "  event_type %s (%d), port %d\n", asyncwatchName(e.Type), uint32(e.Type), int32(e.Element))
	}
}
