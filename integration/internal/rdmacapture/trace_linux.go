//go:build linux && (amd64 || arm64)

package main

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

const (
	rdmaVerbsIoctl = 0xc0181b01 // _IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr)
	hdrSize        = 24
	attrSize       = 16
	attrValidOut   = 1 << 1 // UVERBS_ATTR_F_VALID_OUTPUT
	maxBuf         = 1 << 20
)

// call is a system call seen at its entry, completed at its exit.
type call struct {
	nr       uint64
	dev      string
	args     [3]uint64
	hdrAttrs []byte // RDMA_VERBS_IOCTL: header and attributes at entry
	in       []byte // other ioctls and write: the bytes at entry
	ptrIn    map[int][]byte
}

// regs is what a syscall stop tells, whatever the architecture: the
// system call number, its six arguments (valid at entry) and its return
// value (valid at exit). getRegs (trace_linux_ARCH.go) reads them.
type regs struct {
	nr   uint64
	args [6]uint64
	ret  int64
}

// trace runs args under ptrace and writes a block to w for each request on
// an RDMA device. Every thread of the program (a Go program's runtime
// threads included) and every child it forks are followed:
// PTRACE_O_TRACECLONE, TRACEFORK and TRACEVFORK attach them as they are
// created.
func trace(args []string, stdout, stderr, w io.Writer) error {
	// Every ptrace request must come from the thread that started the tracee.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	var ws unix.WaitStatus
	// The tracee stops with SIGTRAP at its exec.
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		return err
	}
	opts := unix.PTRACE_O_TRACESYSGOOD | unix.PTRACE_O_EXITKILL |
		unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK |
		unix.PTRACE_O_TRACEEXEC // else a traced child's exec sends it a SIGTRAP
	if err := unix.PtraceSetOptions(pid, opts); err != nil {
		return fmt.Errorf("PTRACE_SETOPTIONS: %w", err)
	}
	t := &tracer{w: w, threads: map[int]*thread{pid: {}}}
	defer t.closeAll()
	var status error
	tid, sig := pid, 0
	for {
		if tid != 0 {
			// ESRCH: the thread died between its stop and now.
			if err := unix.PtraceSyscall(tid, sig); err != nil && err != unix.ESRCH {
				return fmt.Errorf("PTRACE_SYSCALL %d: %w", tid, err)
			}
		}
		sig = 0
		var err error
		tid, err = unix.Wait4(-1, &ws, unix.WALL, nil)
		if err == unix.ECHILD {
			return status // every tracee is gone
		}
		if err == unix.EINTR {
			tid = 0
			continue
		}
		if err != nil {
			return err
		}
		th := t.threads[tid]
		switch {
		case ws.Exited() || ws.Signaled():
			if tid == pid {
				if ws.Signaled() {
					status = exitStatus(128 + int(ws.Signal()))
				} else if c := ws.ExitStatus(); c != 0 {
					status = exitStatus(c)
				}
			}
			t.gone(tid)
			tid = 0 // nothing to resume
		case th == nil && ws.Stopped():
			// A new thread or child, attached by the options above: its
			// first stop is a SIGSTOP that must not be delivered.
			t.threads[tid] = &thread{}
			if ws.StopSignal() != syscall.SIGSTOP {
				sig = int(ws.StopSignal())
			}
		case ws.Stopped() && ws.StopSignal() == syscall.SIGTRAP|0x80:
			r, err := getRegs(tid)
			if err == unix.ESRCH {
				// Killed between its stop and now (another thread's
				// exit_group): wait4 reports its exit next.
				tid = 0
				continue
			}
			if err != nil {
				return fmt.Errorf("registers of %d: %w", tid, err)
			}
			t.stop(tid, th, &r)
		case ws.Stopped() && ws.StopSignal() == syscall.SIGTRAP && ws.TrapCause() > 0:
			// PTRACE_EVENT_CLONE, FORK or VFORK: the new tracee reports
			// its own first stop. PTRACE_EVENT_EXEC: the memory is a new
			// one, to be opened afresh.
			if ws.TrapCause() == unix.PTRACE_EVENT_EXEC && th != nil && th.mem != nil {
				th.mem.Close()
				th.mem = nil
			}
		case ws.Stopped():
			sig = int(ws.StopSignal()) // deliver it
		}
	}
}

// thread is one tracee: its system call in progress and its memory.
type thread struct {
	pending *call
	mem     *os.File
}

type tracer struct {
	w       io.Writer
	threads map[int]*thread
}

func (t *tracer) gone(tid int) {
	if th := t.threads[tid]; th != nil && th.mem != nil {
		th.mem.Close()
	}
	delete(t.threads, tid)
}

func (t *tracer) closeAll() {
	for tid := range t.threads {
		t.gone(tid)
	}
}

// stop handles a syscall stop. A thread's stops alternate between entry
// and exit, so one with no call pending is entering one.
func (t *tracer) stop(tid int, th *thread, r *regs) {
	if th.pending == nil {
		t.enter(tid, th, r)
		return
	}
	c := th.pending
	th.pending = nil
	t.exit(th, c, r.ret)
}

func (t *tracer) enter(tid int, th *thread, r *regs) {
	nr := r.nr
	if nr != unix.SYS_IOCTL && nr != unix.SYS_WRITE && nr != unix.SYS_READ {
		th.pending = &call{nr: ^uint64(0)} // a call we do not record; still pair its exit
		return
	}
	c := &call{nr: nr, args: [3]uint64{r.args[0], r.args[1], r.args[2]}}
	link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", tid, int(r.args[0])))
	if !strings.HasPrefix(link, "/dev/infiniband/") {
		th.pending = &call{nr: ^uint64(0)}
		return
	}
	if th.mem == nil {
		// Threads share memory, but each tracee reads through its own
		// /proc/TID/mem, which works for threads and forked children.
		mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", tid))
		if err == nil {
			th.mem = mem
		}
	}
	c.dev = filepath.Base(link)
	switch nr {
	case unix.SYS_IOCTL:
		if c.args[1] == rdmaVerbsIoctl {
			h := t.read(th, c.args[2], hdrSize)
			if len(h) == hdrSize {
				n := int(binary.LittleEndian.Uint16(h[6:]))
				c.hdrAttrs = t.read(th, c.args[2], hdrSize+n*attrSize)
				c.ptrIn = map[int][]byte{}
				for i := 0; i < n && hdrSize+(i+1)*attrSize <= len(c.hdrAttrs); i++ {
					a := c.hdrAttrs[hdrSize+i*attrSize:]
					if l := binary.LittleEndian.Uint16(a[2:]); l > 8 {
						c.ptrIn[i] = t.read(th, binary.LittleEndian.Uint64(a[8:]), int(l))
					}
				}
			}
		} else if size := int(c.args[1]>>16) & 0x3fff; size > 0 {
			c.in = t.read(th, c.args[2], size)
		}
	case unix.SYS_WRITE:
		c.in = t.read(th, c.args[1], int(min(c.args[2], maxBuf)))
	}
	th.pending = c
}

func (t *tracer) exit(th *thread, c *call, ret int64) {
	if c.nr == ^uint64(0) {
		return
	}
	w := t.w
	switch c.nr {
	case unix.SYS_IOCTL:
		fmt.Fprintf(w, "ioctl %s 0x%08x = %s\n", c.dev, c.args[1], retString(ret))
		if c.hdrAttrs != nil {
			t.verbsIoctl(th, c)
			break
		}
		if c.in != nil {
			fmt.Fprintf(w, "  in  %s\n", hex.EncodeToString(c.in))
			if out := t.read(th, c.args[2], len(c.in)); out != nil {
				fmt.Fprintf(w, "  out %s\n", hex.EncodeToString(out))
			}
		}
	case unix.SYS_WRITE:
		fmt.Fprintf(w, "write %s %d = %s\n", c.dev, c.args[2], retString(ret))
		fmt.Fprintf(w, "  in  %s\n", hex.EncodeToString(c.in))
	case unix.SYS_READ:
		fmt.Fprintf(w, "read %s %d = %s\n", c.dev, c.args[2], retString(ret))
		if ret > 0 {
			fmt.Fprintf(w, "  out %s\n", hex.EncodeToString(t.read(th, c.args[1], int(min(ret, maxBuf)))))
		}
	}
}

// verbsIoctl writes an RDMA_VERBS_IOCTL call: the header and attributes as
// they were at entry, and the buffers the attributes point to.
func (t *tracer) verbsIoctl(th *thread, c *call) {
	w, b := t.w, c.hdrAttrs
	le := binary.LittleEndian
	fmt.Fprintf(w, "  hdr length=%d object_id=0x%04x method_id=0x%04x num_attrs=%d reserved1=%d driver_id=%d reserved2=%d\n",
		le.Uint16(b[0:]), le.Uint16(b[2:]), le.Uint16(b[4:]), le.Uint16(b[6:]), le.Uint64(b[8:]), le.Uint32(b[16:]), le.Uint32(b[20:]))
	raw := append([]byte(nil), b...)
	// The kernel writes output lengths and flags back into the attributes.
	after := t.read(th, c.args[2], len(b))
	for i := 0; hdrSize+(i+1)*attrSize <= len(b); i++ {
		off := hdrSize + i*attrSize
		a := b[off:]
		id, l, flags, elem := le.Uint16(a[0:]), le.Uint16(a[2:]), le.Uint16(a[4:]), le.Uint16(a[6:])
		in, isPtr := c.ptrIn[i]
		var outFlags uint16
		var outLen uint16 = l
		if len(after) >= off+attrSize {
			outLen, outFlags = le.Uint16(after[off+2:]), le.Uint16(after[off+4:])
		}
		validOut := outFlags&attrValidOut != 0
		if validOut && l <= 8 {
			isPtr = true // outputs always point to a buffer, however short
		}
		if isPtr {
			fmt.Fprintf(w, "  attr %d id=0x%04x len=%d flags=0x%x elem_id|reserved=0x%04x data=ptr\n", i, id, l, flags, elem)
			for j := 8; j < 16; j++ {
				raw[off+j] = 0
			}
		} else {
			fmt.Fprintf(w, "  attr %d id=0x%04x len=%d flags=0x%x elem_id|reserved=0x%04x data=0x%016x\n", i, id, l, flags, elem, le.Uint64(a[8:]))
		}
		// An output's buffer holds whatever was there before the call.
		if in != nil && !validOut {
			fmt.Fprintf(w, "    in  %s\n", hex.EncodeToString(in))
		}
		if validOut {
			out := t.read(th, le.Uint64(a[8:]), int(outLen))
			fmt.Fprintf(w, "    out %s (len=%d flags=0x%x after the call)\n", hex.EncodeToString(out), outLen, outFlags)
		}
	}
	fmt.Fprintf(w, "  raw %s\n", hex.EncodeToString(raw))
}

// read copies n bytes of the tracee's memory at addr; nil if it cannot.
func (t *tracer) read(th *thread, addr uint64, n int) []byte {
	if n <= 0 || n > maxBuf || addr == 0 || th.mem == nil {
		return nil
	}
	b := make([]byte, n)
	m, err := th.mem.ReadAt(b, int64(addr))
	if err != nil && m < n {
		return nil
	}
	return b
}

func retString(ret int64) string {
	if ret < 0 && ret > -4096 {
		return fmt.Sprintf("%d %s", ret, unix.ErrnoName(syscall.Errno(-ret)))
	}
	return fmt.Sprint(ret)
}
