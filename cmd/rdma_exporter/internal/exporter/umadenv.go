package exporter

import (
	"context"
	"os"

	"github.com/purerdma/rdma/cmd/internal/umadenv"
	"github.com/purerdma/rdma/umad"
)

// openFabricPort opens the port the fabric scan starts from: umad's
// OpenPort(ca, port), or the ibsim fabric PURERDMA_IBSIM names, with
// PURERDMA_UMAD_DEBUG applied, as cmd/purerdma's tools do (umadenv.Open),
// giving up on a silent ibsim when ctx is done.
func openFabricPort(ctx context.Context, ca string, port int) (*umad.Port, error) {
	return umadenv.OpenContext(ctx, nil, os.Getenv(umadenv.IBSim), os.Getenv(umadenv.UmadDebug), ca, port)
}
