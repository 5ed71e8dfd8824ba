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

// trace runs args under ptrace and writes a block to w for each request on
// an RDMA device.
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
	if err := unix.PtraceSetOptions(pid, unix.PTRACE_O_TRACESYSGOOD|unix.PTRACE_O_EXITKILL); err != nil {
		return fmt.Errorf("PTRACE_SETOPTIONS: %w", err)
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return err
	}
	defer mem.Close()
	t := &tracer{pid: pid, mem: mem, w: w}
	sig := 0
	for {
		if err := unix.PtraceSyscall(pid, sig); err != nil {
			return fmt.Errorf("PTRACE_SYSCALL: %w", err)
		}
		sig = 0
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
			return err
		}
		switch {
		case ws.Exited():
			if c := ws.ExitStatus(); c != 0 {
				return exitStatus(c)
			}
			return nil
		case ws.Signaled():
			return exitStatus(128 + int(ws.Signal()))
		case ws.Stopped() && ws.StopSignal() == syscall.SIGTRAP|0x80:
			var regs unix.PtraceRegs
			if err := unix.PtraceGetRegs(pid, &regs); err != nil {
				return fmt.Errorf("PTRACE_GETREGS: %w", err)
			}
			t.stop(&regs)
		case ws.Stopped():
			sig = int(ws.StopSignal()) // deliver it
		}
	}
}

type tracer struct {
	pid     int
	mem     *os.File
	w       io.Writer
	pending *call
}

func (t *tracer) stop(regs *unix.PtraceRegs) {
	// At a syscall-entry stop the kernel has put -ENOSYS in rax.
	if int64(regs.Rax) == -int64(unix.ENOSYS) && t.pending == nil {
		t.enter(regs)
		return
	}
	if c := t.pending; c != nil {
		t.pending = nil
		t.exit(c, int64(regs.Rax))
	}
}

func (t *tracer) enter(regs *unix.PtraceRegs) {
	nr := regs.Orig_rax
	if nr != unix.SYS_IOCTL && nr != unix.SYS_WRITE && nr != unix.SYS_READ {
		t.pending = &call{nr: ^uint64(0)} // a call we do not record; still pair its exit
		return
	}
	c := &call{nr: nr, args: [3]uint64{regs.Rdi, regs.Rsi, regs.Rdx}}
	link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", t.pid, int(regs.Rdi)))
	if !strings.HasPrefix(link, "/dev/infiniband/") {
		t.pending = &call{nr: ^uint64(0)}
		return
	}
	c.dev = filepath.Base(link)
	switch nr {
	case unix.SYS_IOCTL:
		if c.args[1] == rdmaVerbsIoctl {
			h := t.read(c.args[2], hdrSize)
			if len(h) == hdrSize {
				n := int(binary.LittleEndian.Uint16(h[6:]))
				c.hdrAttrs = t.read(c.args[2], hdrSize+n*attrSize)
				c.ptrIn = map[int][]byte{}
				for i := 0; i < n && hdrSize+(i+1)*attrSize <= len(c.hdrAttrs); i++ {
					a := c.hdrAttrs[hdrSize+i*attrSize:]
					if l := binary.LittleEndian.Uint16(a[2:]); l > 8 {
						c.ptrIn[i] = t.read(binary.LittleEndian.Uint64(a[8:]), int(l))
					}
				}
			}
		} else if size := int(c.args[1]>>16) & 0x3fff; size > 0 {
			c.in = t.read(c.args[2], size)
		}
	case unix.SYS_WRITE:
		c.in = t.read(c.args[1], int(min(c.args[2], maxBuf)))
	}
	t.pending = c
}

func (t *tracer) exit(c *call, ret int64) {
	if c.nr == ^uint64(0) {
		return
	}
	w := t.w
	switch c.nr {
	case unix.SYS_IOCTL:
		fmt.Fprintf(w, "ioctl %s 0x%08x = %s\n", c.dev, c.args[1], retString(ret))
		if c.hdrAttrs != nil {
			t.verbsIoctl(c)
			break
		}
		if c.in != nil {
			fmt.Fprintf(w, "  in  %s\n", hex.EncodeToString(c.in))
			if out := t.read(c.args[2], len(c.in)); out != nil {
				fmt.Fprintf(w, "  out %s\n", hex.EncodeToString(out))
			}
		}
	case unix.SYS_WRITE:
		fmt.Fprintf(w, "write %s %d = %s\n", c.dev, c.args[2], retString(ret))
		fmt.Fprintf(w, "  in  %s\n", hex.EncodeToString(c.in))
	case unix.SYS_READ:
		fmt.Fprintf(w, "read %s %d = %s\n", c.dev, c.args[2], retString(ret))
		if ret > 0 {
			fmt.Fprintf(w, "  out %s\n", hex.EncodeToString(t.read(c.args[1], int(min(ret, maxBuf)))))
		}
	}
}

// verbsIoctl writes an RDMA_VERBS_IOCTL call: the header and attributes as
// they were at entry, and the buffers the attributes point to.
func (t *tracer) verbsIoctl(c *call) {
	w, b := t.w, c.hdrAttrs
	le := binary.LittleEndian
	fmt.Fprintf(w, "  hdr length=%d object_id=0x%04x method_id=0x%04x num_attrs=%d reserved1=%d driver_id=%d reserved2=%d\n",
		le.Uint16(b[0:]), le.Uint16(b[2:]), le.Uint16(b[4:]), le.Uint16(b[6:]), le.Uint64(b[8:]), le.Uint32(b[16:]), le.Uint32(b[20:]))
	raw := append([]byte(nil), b...)
	// The kernel writes output lengths and flags back into the attributes.
	after := t.read(c.args[2], len(b))
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
			out := t.read(le.Uint64(a[8:]), int(outLen))
			fmt.Fprintf(w, "    out %s (len=%d flags=0x%x after the call)\n", hex.EncodeToString(out), outLen, outFlags)
		}
	}
	fmt.Fprintf(w, "  raw %s\n", hex.EncodeToString(raw))
}

// read copies n bytes of the tracee's memory at addr; nil if it cannot.
func (t *tracer) read(addr uint64, n int) []byte {
	if n <= 0 || n > maxBuf || addr == 0 {
		return nil
	}
	b := make([]byte, n)
	m, err := t.mem.ReadAt(b, int64(addr))
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
