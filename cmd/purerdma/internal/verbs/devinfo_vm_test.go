//go:build integration

package verbs

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli"
	"github.com/purerdma/rdma/integration/vmtest"
)

// purerdma devinfo/devices print exactly what rdma-core 44's ibv_devinfo
// and ibv_devices print, on the guest's rxe0 and rxe1 (run on 6.1 and 6.12
// by make integration).
func TestVMDevinfoMatchesRdmaCore(t *testing.T) {
	env := DefaultEnv()
	vmtest.Require(t)
	for _, args := range [][]string{
		{"ibv_devinfo", "-v", "-d", vmtest.Dev0},
		{"ibv_devinfo", "-v", "-d", vmtest.Dev1},
		{"ibv_devinfo", "-v"},
		{"ibv_devinfo"},
		{"ibv_devinfo", "-d", vmtest.Dev1, "-i", "1"},
		{"ibv_devinfo", "-l"},
		{"ibv_devinfo", "-d", vmtest.Dev0, "-i", "257"},
		{"ibv_devinfo", "-vi0x1", "--ib-dev=" + vmtest.Dev1},
		{"ibv_devices"},
	} {
		want, err := exec.Command(args[0], args[1:]...).Output()
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(args, " "), err)
		}
		var got, stderr bytes.Buffer
		if err := env.run(args, &got, &stderr); err != nil {
			t.Fatalf("purerdma %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		if diff := cmp.Diff(string(want), got.String()); diff != "" {
			t.Errorf("%s on %s differs (-rdma-core +purerdma):\n%s", strings.Join(args, " "), vmtest.Kernel(), diff)
		} else {
			t.Logf("%s: identical (%d lines)", strings.Join(args, " "), strings.Count(got.String(), "\n"))
		}
	}
}

// The error cases print what ibv_devinfo prints and exit as it does.
func TestVMDevinfoErrorsMatchRdmaCore(t *testing.T) {
	env := DefaultEnv()
	vmtest.Require(t)
	for _, args := range [][]string{
		{"ibv_devinfo", "-d", "nosuchdev"},
		{"ibv_devinfo", "-d", vmtest.Dev0, "-i", "2"},
		{"ibv_devinfo", "-i", "0"},
	} {
		cmd := exec.Command(args[0], args[1:]...)
		var wantOut, wantErr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &wantOut, &wantErr
		werr := cmd.Run()
		wantCode := 0
		if ee, ok := werr.(*exec.ExitError); ok {
			wantCode = ee.ExitCode()
		}
		var got, gotErr bytes.Buffer
		code := 0
		if err := env.run(args, &got, &gotErr); err != nil {
			if ee, ok := err.(cli.ExitError); ok {
				code = ee.Code
			} else {
				code = -1
			}
		}
		if code != wantCode || got.String() != wantOut.String() || gotErr.String() != wantErr.String() {
			t.Errorf("%s: purerdma exit %d stdout %q stderr %q; rdma-core exit %d stdout %q stderr %q",
				strings.Join(args, " "), code, got.String(), gotErr.String(), wantCode, wantOut.String(), wantErr.String())
		}
	}
}
