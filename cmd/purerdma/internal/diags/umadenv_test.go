package diags

import (
	"errors"
	"strings"
	"testing"

	"github.com/purerdma/rdma/cmd/internal/umadenv"
	"github.com/purerdma/rdma/umad"
)

// TestOpenPortEnv: the tools, not umad, take PURERDMA_IBSIM and
// PURERDMA_UMAD_DEBUG: DefaultEnv reads them, and openPort acts on the
// Env's values.
func TestOpenPortEnv(t *testing.T) {
	defer umad.SetDebug(umad.SetDebug(-1))
	t.Setenv(umadenv.IBSim, "purerdma-test-none-"+t.Name()+":Hca1")
	t.Setenv(umadenv.UmadDebug, "0")
	env := DefaultEnv()
	if env.IBSim != "purerdma-test-none-"+t.Name()+":Hca1" || env.UmadDebug != "0" {
		t.Fatalf("DefaultEnv: IBSim %q, UmadDebug %q", env.IBSim, env.UmadDebug)
	}
	h := &umad.Host{DevDir: t.TempDir()}
	_, err := env.openPort(h, "", 0)
	if !errors.Is(err, umad.ErrNoDevice) || !strings.Contains(err.Error(), "ibsim:purerdma-test-none") {
		t.Errorf("PURERDMA_IBSIM without ibsim: %v, want ErrNoDevice on the ibsim socket", err)
	}
	for v, want := range map[string]int{"0": 0, "1": 1, "2": 2, "-3": 0, "yes": 1} {
		if got := umadenv.DebugLevel(v); got != want {
			t.Errorf("umadenv.DebugLevel(%q) = %d, want %d", v, got, want)
		}
	}
	env = &Env{UmadDebug: "2", IBSim: env.IBSim}
	env.openPort(h, "", 0)
	if got := umad.SetDebug(-1); got != 2 {
		t.Errorf("UmadDebug 2: level %d", got)
	}
	// Without IBSim the port is the host's: here no umad device at all.
	_, err = (&Env{}).openPort(h, "", 0)
	if err == nil || strings.Contains(err.Error(), "ibsim") {
		t.Errorf("no IBSim: %v, want the host's error", err)
	}
}
