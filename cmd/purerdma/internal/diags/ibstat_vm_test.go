//go:build integration

package diags

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/purerdma/rdma/integration/vmtest"
)

// TestVMIbstatMatchesRdmaCore: purerdma's ibstat and ibstatus print the
// same text as rdma-core's on rxe0 and rxe1, in every form.
func TestVMIbstatMatchesRdmaCore(t *testing.T) {
	vmtest.Require(t)
	for _, args := range [][]string{
		{"ibstat"}, {"ibstat", "-s"}, {"ibstat", "-l"}, {"ibstat", "-p"},
		{"ibstat", "rxe0"}, {"ibstat", "rxe1"}, {"ibstat", "rxe1", "1"}, {"ibstat", "-p", "rxe1"},
		{"ibstatus"}, {"ibstatus", "rxe0"}, {"ibstatus", "rxe1:1"}, {"ibstatus", "rxe0", "rxe1"},
	} {
		want, err := exec.Command("/usr/sbin/"+args[0], args[1:]...).Output()
		if err != nil {
			t.Fatalf("rdma-core %v: %v", args, err)
		}
		var got, errb bytes.Buffer
		if err := DefaultEnv().run(append([]string{"purerdma"}, args...), &got, &errb); err != nil {
			t.Fatalf("purerdma %v: %v %s", args, err, errb.String())
		}
		if got.String() != string(want) {
			t.Errorf("%v differs (kernel %s):\n--- rdma-core\n%s--- purerdma\n%s", args, vmtest.Kernel(), want, got.String())
			continue
		}
		t.Logf("%v: identical, %d bytes", args, len(want))
	}
}
