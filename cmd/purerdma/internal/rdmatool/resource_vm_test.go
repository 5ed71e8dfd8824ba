//go:build integration

package rdmatool

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
)

// TestVMResourceMatchesRdma: with an ibv_rc_pingpong server holding a
// context, PD, CQ, QP and MR on rxe0, and rdma-core's rping server
// listening on rxe0's address (an rdma_cm ID), purerdma resource prints what
// iproute2's rdma resource show prints (text and -j, every kind, the
// filters, the errors), with the same exit status.
func TestVMResourceMatchesRdma(t *testing.T) {
	vmtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := exec.CommandContext(ctx, "ibv_rc_pingpong", "-d", "rxe0", "-g", "0", "-p", "18601")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	// The server holds its objects once it listens.
	for {
		out, _ := exec.Command("rdma", "resource", "show", "qp").Output()
		if bytes.Contains(out, []byte("ibv_rc_pingpong")) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("ibv_rc_pingpong created no QP")
		case <-time.After(50 * time.Millisecond):
		}
	}
	rping := exec.CommandContext(ctx, "rping", "-s", "-a", vmtest.Addr0, "-p", "18602")
	if err := rping.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { rping.Process.Kill(); rping.Wait() }()
	for {
		out, _ := exec.Command("rdma", "resource", "show", "cm_id").Output()
		if bytes.Contains(out, []byte("LISTEN")) && bytes.Contains(out, []byte("rping")) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("rping created no listening cm_id")
		case <-time.After(50 * time.Millisecond):
		}
	}
	for _, args := range [][]string{
		{}, {"rxe0"}, {"qp"}, {"cq"}, {"pd"}, {"mr"}, {"ctx"}, {"cm_id"}, {"cm_id", "link", "rxe0/1"},
		{"qp", "link", "rxe0/1"}, {"cq", "dev", "rxe1"}, {"mr", "dev", "rxe0"}, {"nosuch"}, {"qp", "link", "nosuch"},
	} {
		for _, j := range [][]string{nil, {"-j"}} {
			cargs := append(append(append([]string{}, j...), "resource", "show"), args...)
			var cout, cerr bytes.Buffer
			c := exec.Command("rdma", cargs...)
			c.Stdout, c.Stderr = &cout, &cerr
			ccode := 0
			var ee *exec.ExitError
			if err := c.Run(); errors.As(err, &ee) {
				ccode = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			gout, gerr, gcode := runTool(DefaultEnv(), append(append(append([]string{"resource"}, j...), "show"), args...)...)
			if gout != cout.String() || gerr != cerr.String() || gcode != ccode {
				t.Errorf("%v (kernel %s):\nrdma:     exit %d\n%s%s\npurerdma: exit %d\n%s%s", cargs, vmtest.Kernel(), ccode, cout.String(), cerr.String(), gcode, gout, gerr)
				continue
			}
			t.Logf("%s: identical (exit %d, %d lines)", strings.Join(cargs, " "), ccode, strings.Count(gout, "\n"))
		}
	}
}
