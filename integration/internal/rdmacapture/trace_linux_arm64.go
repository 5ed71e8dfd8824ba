package main

import "golang.org/x/sys/unix"

// ntPRStatus is NT_PRSTATUS (include/uapi/linux/elf.h), the general
// registers' regset.
const ntPRStatus = 1

// getRegs reads a syscall stop's registers on arm64 with PTRACE_GETREGSET
// NT_PRSTATUS (struct user_pt_regs): the number in x8, the arguments in
// x0–x5, the return value in x0 (arch/arm64/kernel/syscall.c,
// invoke_syscall). At the exit stop x0 already holds the return value, so
// the arguments are taken at entry, as the tracer does.
func getRegs(tid int) (regs, error) {
	var r unix.PtraceRegsArm64
	if err := unix.PtraceGetRegSetArm64(tid, ntPRStatus, &r); err != nil {
		return regs{}, err
	}
	return regs{
		nr:   r.Regs[8],
		args: [6]uint64{r.Regs[0], r.Regs[1], r.Regs[2], r.Regs[3], r.Regs[4], r.Regs[5]},
		ret:  int64(r.Regs[0]),
	}, nil
}
