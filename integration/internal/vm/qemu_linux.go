package vm

import (
	"os/exec"
	"syscall"
)

// killWithParent makes the kernel kill qemu if vmrun dies first (say, of
// SIGPIPE when its output goes to `head`).
func killWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
