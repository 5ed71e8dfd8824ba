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

// runTool runs one of the family's tools, bound to env, and returns its
// outputs and exit status.
func (env *Env) runTool(args ...string) (stdout, stderr string, code int) {
	return clitest.Run(Tools(env), args...)
}
