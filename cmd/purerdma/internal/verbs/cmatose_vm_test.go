//go:build integration

package verbs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
)

// The RDMA CM examples (ucmatose, udaddy) with either side rdma-core's C
// tool or purerdma's, as separate processes: purerdma is the binary vmrun
// puts on the guest's PATH.

// cmProc is one side: a started command and its output.
type cmProc struct {
	name string
	cmd  *exec.Cmd
	out  bytes.Buffer
}

// purerdmaBin is the guest's purerdma command, or a skip.
func purerdmaBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("purerdma")
	if err != nil {
		t.Skip("the guest has no purerdma command (vmrun -cmds=false): " + err.Error())
	}
	return bin
}

func cmStart(t *testing.T, ctx context.Context, name string, argv ...string) *cmProc {
	t.Helper()
	p := &cmProc{name: name, cmd: exec.CommandContext(ctx, argv[0], argv[1:]...)}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// wait returns the side's exit status and output.
func (p *cmProc) wait(t *testing.T) (int, string) {
	t.Helper()
	err := p.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, p.out.String()
	case errors.As(err, &ee) && ee.Exited():
		return ee.ExitCode(), p.out.String()
	}
	t.Fatalf("%s: %v\n%s", p.name, err, p.out.String())
	return -1, ""
}

// cmWaitListen waits until the RDMA CM has a listener of port space ps
// ("TCP", "UDP", as rdma names it) on port: `rdma resource show cm_id` lists it in state
// LISTEN. Nothing connects to it, and a client started after it is not
// rejected for want of a listener.
func cmWaitListen(t *testing.T, ctx context.Context, srv *cmProc, ps string, port int) {
	t.Helper()
	want := fmt.Sprintf(":%d ", port)
	for {
		out, err := exec.CommandContext(ctx, "rdma", "resource", "show", "cm_id").Output()
		if err != nil && ctx.Err() == nil {
			t.Fatalf("rdma resource show cm_id: %v", err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "state LISTEN ps "+ps+" ") && strings.Contains(l+" ", want) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: no %s listener on port %d:\n%s", srv.name, ps, port, srv.out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// wantLines checks that out holds the lines, in this order.
func wantLines(t *testing.T, who, out string, lines ...string) {
	t.Helper()
	rest := out
	for _, l := range lines {
		i := strings.Index(rest, l+"\n")
		if i < 0 {
			t.Errorf("%s: no line %q (in order) in:\n%s", who, l, out)
			return
		}
		rest = rest[i+len(l)+1:]
	}
}

var (
	cmatoseServerLines = []string{"cmatose: starting server", "initiating data transfers", "completing sends",
		"receiving data transfers", "data transfers complete", "cmatose: disconnecting", "disconnected",
		"test complete", "return status 0"}
	cmatoseClientLines = []string{"cmatose: starting client", "cmatose: connecting", "receiving data transfers",
		"sending replies", "data transfers complete", "test complete", "return status 0"}
	udaddyServerLines = []string{"udaddy: starting server", "receiving data transfers", "sending replies",
		"data transfers complete", "test complete", "return status 0"}
	udaddyClientLines = []string{"udaddy: starting client", "udaddy: connecting", "initiating data transfers",
		"receiving data transfers", "data transfers complete", "test complete", "return status 0"}
)

// cmPair runs a server, waits for its listener, runs a client, and checks
// that both exit 0 with their lines.
func cmPair(t *testing.T, ps string, port int, srvLines, cliLines []string, server, client []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := cmStart(t, ctx, "server "+strings.Join(server, " "), server...)
	cmWaitListen(t, ctx, srv, ps, port)
	cli := cmStart(t, ctx, "client "+strings.Join(client, " "), client...)
	ccode, cout := cli.wait(t)
	scode, sout := srv.wait(t)
	if ccode != 0 || scode != 0 {
		t.Fatalf("exit statuses: server %d, client %d\nserver %v:\n%s\nclient %v:\n%s", scode, ccode, server, sout, client, cout)
	}
	wantLines(t, "server", sout, srvLines...)
	wantLines(t, "client", cout, cliLines...)
	t.Logf("kernel %s\nserver %v:\n%s\nclient %v:\n%s", vmtest.Kernel(), server, sout, client, cout)
}

// TestVMUcmatoseGoServerCClient: purerdma ucmatose serves rdma-core's
// ucmatose client, 10 connections of 10 messages each way.
func TestVMUcmatoseGoServerCClient(t *testing.T) {
	vmtest.Require(t)
	bin := purerdmaBin(t)
	cmPair(t, "TCP", 7471, cmatoseServerLines, cmatoseClientLines,
		[]string{bin, "ucmatose", "-c", "10", "--timeout", "2m"},
		[]string{"ucmatose", "-s", vmtest.Addr0, "-c", "10"})
}

// TestVMUcmatoseCServerGoClient: rdma-core's ucmatose serves purerdma's
// client, 10 connections.
func TestVMUcmatoseCServerGoClient(t *testing.T) {
	vmtest.Require(t)
	bin := purerdmaBin(t)
	cmPair(t, "TCP", 7472, cmatoseServerLines, cmatoseClientLines,
		[]string{"ucmatose", "-c", "10", "-p", "7472"},
		[]string{bin, "ucmatose", "-s", vmtest.Addr0, "-c", "10", "-p", "7472", "--timeout", "2m"})
}

// TestVMUcmatoseGoGo: both sides purerdma, with the options the C
// interop tests leave out: larger and more messages, the bind address,
// a type of service, an ACK timeout and the migration to a new event
// channel before disconnecting.
func TestVMUcmatoseGoGo(t *testing.T) {
	vmtest.Require(t)
	bin := purerdmaBin(t)
	srvLines := append([]string{}, cmatoseServerLines[:5]...)
	srvLines = append(srvLines, append([]string{"migrating to new event channel"}, cmatoseServerLines[5:]...)...)
	cliLines := append(append([]string{}, cmatoseClientLines[:5]...), "migrating to new event channel", "test complete", "return status 0")
	cmPair(t, "TCP", 7473, srvLines, cliLines,
		[]string{bin, "ucmatose", "-b", vmtest.Addr0, "-p", "7473", "-c", "4", "-C", "50", "-S", "4000", "-m", "-a", "16", "--timeout", "2m"},
		[]string{bin, "ucmatose", "-s", vmtest.Addr0, "-b", vmtest.Addr0, "-p", "7473", "-c", "4", "-C", "50", "-S", "4000",
			"-m", "-t", "32", "-a", "16", "--timeout", "2m"})
}

// TestVMUcmatoseIBPortSpace: -P ib, C server and purerdma client.
// (iproute2's rdma names RDMA_PS_IB "IPoIB", as it does RDMA_PS_IPOIB.)
func TestVMUcmatoseIBPortSpace(t *testing.T) {
	vmtest.Require(t)
	bin := purerdmaBin(t)
	cmPair(t, "IPoIB", 7474, cmatoseServerLines, cmatoseClientLines,
		[]string{"ucmatose", "-P", "ib", "-p", "7474", "-c", "2"},
		[]string{bin, "ucmatose", "-P", "ib", "-s", vmtest.Addr0, "-p", "7474", "-c", "2", "--timeout", "2m"})
}

// TestVMUcmatoseNoServer: with nobody listening, purerdma's client prints
// and exits as rdma-core's does.
func TestVMUcmatoseNoServer(t *testing.T) {
	vmtest.Require(t)
	bin := purerdmaBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ccode, cout := cmStart(t, ctx, "C client", "ucmatose", "-s", vmtest.Addr0, "-p", "7479").wait(t)
	gcode, gout := cmStart(t, ctx, "Go client", bin, "ucmatose", "-s", vmtest.Addr0, "-p", "7479", "--timeout", "1m").wait(t)
	if ccode == 0 || gcode != ccode || gout != cout {
		t.Fatalf("C: exit %d\n%s\nGo: exit %d\n%s", ccode, cout, gcode, gout)
	}
	t.Logf("both exit %d:\n%s", gcode, gout)
}

// TestVMUdaddyGoServerCClient: purerdma udaddy serves rdma-core's udaddy
// client, 10 UD "connections" (SIDR) of 10 messages each way.
func TestVMUdaddyGoServerCClient(t *testing.T) {
	vmtest.Require(t)
	bin := purerdmaBin(t)
	cmPair(t, "UDP", 7174, udaddyServerLines, udaddyClientLines,
		[]string{bin, "udaddy", "-c", "10", "--timeout", "2m"},
		[]string{"udaddy", "-s", vmtest.Addr0, "-c", "10"})
}

// TestVMUdaddyCServerGoClient: rdma-core's udaddy serves purerdma's client.
func TestVMUdaddyCServerGoClient(t *testing.T) {
	vmtest.Require(t)
	bin := purerdmaBin(t)
	cmPair(t, "UDP", 7174, udaddyServerLines, udaddyClientLines,
		[]string{"udaddy", "-c", "10"},
		[]string{bin, "udaddy", "-s", vmtest.Addr0, "-c", "10", "--timeout", "2m"})
}

// TestVMUdaddyGoGo: both sides purerdma, on another port, with messages
// of up to the path MTU.
func TestVMUdaddyGoGo(t *testing.T) {
	vmtest.Require(t)
	bin := purerdmaBin(t)
	cmPair(t, "UDP", 7180, udaddyServerLines, udaddyClientLines,
		[]string{bin, "udaddy", "--port", "7180", "-c", "3", "-C", "40", "-S", "1024", "--timeout", "2m"},
		[]string{bin, "udaddy", "--port", "7180", "-s", vmtest.Addr0, "-b", vmtest.Addr0, "-c", "3", "-C", "40", "-S", "1024", "-t", "8", "--timeout", "2m"})
}
