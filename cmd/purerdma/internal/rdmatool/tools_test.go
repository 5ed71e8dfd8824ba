package rdmatool

import "github.com/purerdma/rdma/cmd/purerdma/internal/cli/clitest"

// runTool runs one of the family's tools, bound to env.
func runTool(env *Env, args ...string) (stdout, stderr string, code int) {
	return clitest.Run(Tools(env), args...)
}
