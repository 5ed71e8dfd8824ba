//go:build integration

package diags

import (
	"bytes"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/sysfs"
)

var pidRE = regexp.MustCompile(`\[\d+\]`)

// TestVMIbstatErrorsMatchRdmaCore: ibstat's failures print what
// infiniband-diags' ibstat prints (strerror text included, the pid aside)
// on the same streams, with the same exit status.
func TestVMIbstatErrorsMatchRdmaCore(t *testing.T) {
	vmtest.Require(t)
	for _, args := range [][]string{
		{"ibstat", "nosuch"}, {"ibstat", "rxe0", "9"}, {"ibstat", "rxe0", "x"}, {"ibstat", "rxe1", "0"},
	} {
		var cout, cerr bytes.Buffer
		cmd := exec.Command("/usr/sbin/"+args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = &cout, &cerr
		ccode := 0
		var ee *exec.ExitError
		if err := cmd.Run(); errors.As(err, &ee) {
			ccode = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		gout, gerr, gcode := DefaultEnv().runTool(args...)
		want := pidRE.ReplaceAllString(cerr.String(), "[PID]")
		got := pidRE.ReplaceAllString(gerr, "[PID]")
		if gcode != ccode || gout != cout.String() || got != want {
			t.Errorf("%v (kernel %s):\nrdma-core: exit %d, stdout %q, stderr %q\npurerdma:  exit %d, stdout %q, stderr %q",
				args, vmtest.Kernel(), ccode, cout.String(), want, gcode, gout, got)
			continue
		}
		t.Logf("%v: identical, exit %d, stderr %q", args, ccode, want)
	}
}

// TestVMUmadSendUnserved: a Get to a vendor class nobody serves is
// answered by the kernel's MAD layer with status 0x000c; umad send prints
// the answer and fails.
func TestVMUmadSendUnserved(t *testing.T) {
	vmtest.Require(t)
	f, err := sysfs.New("")
	if err != nil {
		t.Fatal(err)
	}
	p1, err := f.Port(vmtest.Dev1, 1)
	if err != nil {
		t.Fatal(err)
	}
	g, err := p1.GID(0)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err = DefaultEnv().run([]string{"purerdma", "umad", "send", "-C", "rxe0", "--dgid", g.GID.Addr().String(), "--class", "0x31", "-t", "500", "--retries", "2"}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "MAD status 0x000c (method/attribute unsupported)") || !strings.Contains(err.Error(), "nobody there serves class 0x31") {
		t.Fatalf("send to an unserved class: %v\nstdout %s", err, out.String())
	}
	if !strings.Contains(out.String(), "status 0x000c") {
		t.Errorf("the answer is not shown: %q", out.String())
	}
	t.Logf("%s%v", out.String(), err)
}
