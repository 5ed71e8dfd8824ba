//go:build integration

package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/umad"
)

// TestVMPerfqueryNoPMA: rxe has no PMA. The kernel's MAD layer answers a
// PerfMgmt Get nobody registered for with status 0x000c; perfquery says
// so clearly, at once.
func TestVMPerfqueryNoPMA(t *testing.T) {
	vmtest.Require(t)
	for _, args := range [][]string{{"perfquery"}, {"perfquery", "-x", "-C", "rxe1", "-P", "1"}} {
		var out, errb bytes.Buffer
		start := time.Now()
		err := run(append([]string{"purerdma"}, args...), &out, &errb)
		var ee exitError
		if !errors.As(err, &ee) || ee.code != 255 || !strings.Contains(errb.String(), "status 0x000c") ||
			!strings.Contains(errb.String(), "the device has no PMA") {
			t.Fatalf("%v: %v\nstdout: %s\nstderr: %s", args, err, out.String(), errb.String())
		}
		t.Logf("%v after %v:\n%s", args, time.Since(start), errb.String())
	}
}

// TestVMPerfqueryNothingAnswers: a PerfMgmt query that nobody answers
// (here an agent on rxe1 takes PerfMgmt Gets and stays silent, like a
// dead PMA) comes back as a timeout error after the retries, not a hang;
// one to a GID whose neighbour does not resolve fails clearly too.
func TestVMPerfqueryNothingAnswers(t *testing.T) {
	vmtest.Require(t)
	silent, err := umad.OpenPort(vmtest.Dev1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if _, err := silent.Register(uint8(umad.ClassPerfMgmt), 1, umad.MethodMaskOf(uint8(umad.MethodGet))); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	start := time.Now()
	err = run([]string{"purerdma", "perfquery", "-C", "rxe1", "-t", "100", "--retries", "2"}, &out, &errb)
	el := time.Since(start)
	var ee exitError
	if !errors.As(err, &ee) || !strings.Contains(errb.String(), "no response from the PMA") || !strings.Contains(errb.String(), "after 3 tries 100ms apart") {
		t.Fatalf("%v\nstderr: %s", err, errb.String())
	}
	if el < 300*time.Millisecond || el > 5*time.Second {
		t.Fatalf("took %v; 3 tries × 100 ms expected", el)
	}
	t.Logf("after %v: %s", el, errb.String())

	errb.Reset()
	start = time.Now()
	err = run([]string{"purerdma", "perfquery", "-C", "rxe0", "-t", "100", "--retries", "2", "--dgid", "fe80::dead:beef"}, &out, &errb)
	if !errors.As(err, &ee) || !strings.Contains(errb.String(), "neighbour") {
		t.Fatalf("%v\nstderr: %s", err, errb.String())
	}
	t.Logf("unreachable GID, after %v: %s", time.Since(start), errb.String())
}
