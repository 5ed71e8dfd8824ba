package diags

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purerdma/rdma/umad"
)

// TestMadLog: libibmad's three levels of warnings, each in IBWARN's form,
// and a nil log silent.
func TestMadLog(t *testing.T) {
	pid := "[" + strconv.Itoa(os.Getpid()) + "]"
	for _, c := range []struct {
		errs, debug bool
		want        []string
	}{
		{false, false, []string{"ibwarn: " + pid + " f: warn 1"}},
		{true, false, []string{"ibwarn: " + pid + " f: warn 1", "ibwarn: " + pid + " f: errs 2"}},
		{true, true, []string{"ibwarn: " + pid + " f: warn 1", "ibwarn: " + pid + " f: errs 2", "ibwarn: " + pid + " f: debug 3"}},
	} {
		var b bytes.Buffer
		l := &madLog{w: &b, errs: c.errs, debug: c.debug}
		l.warn("f", "warn %d", 1)
		l.err("f", "errs %d", 2)
		l.dbg("f", "debug %d", 3)
		if got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("errs %v debug %v: %q, want %q", c.errs, c.debug, got, c.want)
		}
	}
	var l *madLog
	l.warn("f", "x")
	l.err("f", "x")
	l.dbg("f", "x")
}

// TestErrNoAnswer: the error of a query nothing answered says how many
// tries went out and what became of them, and matches umad.ErrTimeout.
func TestErrNoAnswer(t *testing.T) {
	for _, c := range []struct {
		e    errNoAnswer
		want []string
	}{
		{errNoAnswer{dest: "Lid 4", tries: 3, of: 3, timeout: time.Second}, []string{"after 3 tries 1s apart"}},
		{errNoAnswer{dest: "Lid 4", tries: 3, of: 3, lost: 3, sim: true, timeout: time.Second}, []string{"after 3 tries", "ibsim reported each lost"}},
		{errNoAnswer{dest: "Lid 4", tries: 3, of: 3, lost: 2, sim: true, timeout: time.Second}, []string{"after 3 tries", "2 reported lost by ibsim, 1 timed out after 1s"}},
		{errNoAnswer{dest: "Lid 4", tries: 2, of: 3, silent: true, sim: true, timeout: time.Second}, []string{"to try 2 of 3", "ibsim is stopped or busy"}},
		{errNoAnswer{dest: "Lid 4", tries: 1, of: 3, silent: true, timeout: time.Second}, []string{"to try 1", "the kernel did not report its timeout"}},
	} {
		err := error(&c.e)
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) || !strings.Contains(err.Error(), "Lid 4") {
				t.Errorf("%+v: %q lacks %q", c.e, err, w)
			}
		}
		if !errors.Is(err, umad.ErrTimeout) {
			t.Errorf("%+v: not ErrTimeout", c.e)
		}
	}
}

// TestReportedLost: only an ibsim port reports a try lost; a kernel
// port's status before the timeout measured after the send is still the
// kernel's timeout (TestVMPerfqueryNothingAnswers once read "1 reported
// lost by ibsim" on rxe).
func TestReportedLost(t *testing.T) {
	kernel := &madRPC{timeout: 100 * time.Millisecond}
	sim := &madRPC{timeout: 100 * time.Millisecond, sim: true}
	for _, c := range []struct {
		r      *madRPC
		waited time.Duration
		want   bool
	}{
		{kernel, 0, false},
		{kernel, 95 * time.Millisecond, false},
		{kernel, 150 * time.Millisecond, false},
		{sim, 0, true},
		{sim, 95 * time.Millisecond, true},
		{sim, 150 * time.Millisecond, false},
	} {
		if got := c.r.reportedLost(c.waited); got != c.want {
			t.Errorf("sim %v, after %v: reportedLost = %v, want %v", c.r.sim, c.waited, got, c.want)
		}
	}
}
