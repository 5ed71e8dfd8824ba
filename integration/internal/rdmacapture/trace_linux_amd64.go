package main

import "golang.org/x/sys/unix"

// getRegs reads a syscall stop's registers on amd64 (PTRACE_GETREGS): the
// number in orig_rax, the arguments in rdi, rsi, rdx, r10, r8, r9, the
// return value in rax (arch/x86/entry/entry_64.S).
func getRegs(tid int) (regs, error) {
	var r unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &r); err != nil {
		return regs{}, err
	}
	return regs{
		nr:   r.Orig_rax,
		args: [6]uint64{r.Rdi, r.Rsi, r.Rdx, r.R10, r.R8, r.R9},
		ret:  int64(r.Rax),
	}, nil
}
