package diags

import (
	"io"

	"github.com/purerdma/rdma/cmd/purerdma/internal/cli/clitest"
)

// run runs argv (`purerdma TOOL ARGS...`) among the family's tools, bound
// to env.
func (env *Env) run(argv []string, stdout, stderr io.Writer) error {
	return clitest.Main(Tools(env), argv, stdout, stderr)
}
