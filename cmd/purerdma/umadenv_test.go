package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/purerdma/rdma/umad"
)

// TestOpenUmadPortEnv: the tools, not umad, take PURERDMA_IBSIM and
// PURERDMA_UMAD_DEBUG.
func TestOpenUmadPortEnv(t *testing.T) {
	defer umad.SetDebug(umad.SetDebug(-1))
	h := &umad.Host{DevDir: t.TempDir()}
	t.Setenv(envIBSim, "purerdma-test-none-"+t.Name()+":Hca1")
	t.Setenv(envUmadDebug, "0")
	_, err := openUmadPort(h, "", 0)
	if !errors.Is(err, umad.ErrNoDevice) || !strings.Contains(err.Error(), "ibsim:purerdma-test-none") {
		t.Errorf("PURERDMA_IBSIM without ibsim: %v, want ErrNoDevice on the ibsim socket", err)
	}
	for v, want := range map[string]int{"0": 0, "1": 1, "2": 2, "-3": 0, "yes": 1} {
		if got := umadDebugLevel(v); got != want {
			t.Errorf("umadDebugLevel(%q) = %d, want %d", v, got, want)
		}
	}
	t.Setenv(envUmadDebug, "2")
	openUmadPort(h, "", 0)
	if got := umad.SetDebug(-1); got != 2 {
		t.Errorf("PURERDMA_UMAD_DEBUG=2: level %d", got)
	}
}
