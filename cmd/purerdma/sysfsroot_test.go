package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/cmd/purerdma/internal/diags"
)

// ibstatRun runs a diags tool on the sysfs tree at root.
func ibstatRun(t *testing.T, root string, args ...string) (string, string, error) {
	t.Helper()
	reg := registry(env{diags: &diags.Env{SysfsRoot: root}})
	var out, errb bytes.Buffer
	err := runIn(reg, append([]string{"purerdma"}, args...), &out, &errb)
	return out.String(), errb.String(), err
}

// TestToolsStayInRoot: a sysfs tree whose port rate is a link to
// /etc/passwd and whose ports/ climbs out with ../ is read inside the tree
// (package sysfs resolves links in the root): ibstat and ibstatus never
// print the host's /etc/passwd or list the host's /etc.
func TestToolsStayInRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	copyResolved(t, filepath.Join(ibstatFixtures, "rxe-6.1"), root)
	rate := filepath.Join(root, "class/infiniband/rxe0/ports/1/rate")
	if err := os.Remove(rate); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", rate); err != nil {
		t.Fatal(err)
	}
	ports := filepath.Join(root, "class/infiniband/rxe1/ports")
	if err := os.RemoveAll(ports); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(strings.Repeat("../", 12)+"etc", ports); err != nil {
		t.Fatal(err)
	}
	host, err := os.ReadFile("/etc/passwd")
	if err != nil || len(host) == 0 {
		t.Skipf("no /etc/passwd here to tell from the tree: %v", err)
	}
	first := strings.SplitN(string(host), "\n", 2)[0]
	for _, args := range [][]string{{"ibstat"}, {"ibstat", "rxe0"}, {"ibstatus"}, {"ibstatus", "rxe0"}, {"ibstat", "rxe1"}} {
		out, errOut, _ := ibstatRun(t, root, args...)
		for _, leak := range []string{first, "passwd", "hostname"} {
			if strings.Contains(out, leak) || strings.Contains(errOut, leak) {
				t.Errorf("%v printed %q from the host's /etc:\n%s\n%s", args, leak, out, errOut)
			}
		}
	}
}

// TestIbstatDanglingDevice: when the only device is a dangling link
// (class/infiniband/X -> a device directory that is not there), ibstat
// fails as infiniband-diags' ibstat does when it cannot read a CA, after a
// warning naming the link, instead of printing nothing and exiting 0.
func TestIbstatDanglingDevice(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	if err := os.MkdirAll(filepath.Join(root, "class/infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../devices/nowhere/X", filepath.Join(root, "class/infiniband/X")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"ibstat"}, {"ibstat", "X"}} {
		out, errOut, err := ibstatRun(t, root, args...)
		var ee cli.ExitError
		if !errors.As(err, &ee) || ee.Code != 255 || out != "" {
			t.Errorf("%v: exit %v, stdout %q; want status 255 and nothing printed", args, err, out)
		}
		if !strings.Contains(errOut, "stat of IB device 'X' failed: No such file or directory") ||
			!strings.Contains(errOut, "class/infiniband/X is a dangling symbolic link: its target ../../devices/nowhere/X does not exist") {
			t.Errorf("%v: stderr %q, want the failed stat naming the dangling link", args, errOut)
		}
	}
}
