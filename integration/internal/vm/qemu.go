package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/purerdma/rdma/integration/internal/vmproto"
)

// HarnessExit is vmrun's exit status when the VM itself failed (it could
// not be started, the guest could not set up, panicked or hung), as
// opposed to the command's own status.
const HarnessExit = 125

// Boot describes one VM run.
type Boot struct {
	*Prepared
	Job     vmproto.Job
	Shares  map[string]string // 9p tag -> host directory, next to the job directory
	Accel   string            // "auto", "tcg" or "kvm"
	Timeout time.Duration
	Memory  int // MiB
	CPUs    int

	Stdin          io.Reader // for the shell only
	Stdout, Stderr io.Writer // the command's output
	Console        io.Writer // the guest's serial console (-v); may be nil
	Logf           func(format string, args ...any)
}

// Result is how a VM run ended.
type Result struct {
	ExitCode int           // the command's exit status
	Accel    string        // the accelerator that was used
	Ready    time.Duration // host time from qemu's start until the guest was ready
	Total    time.Duration // host time from qemu's start until it exited
}

// KVMUsable reports whether /dev/kvm can be used for Debian's stock
// kernel. The paravirtual kvm_pvm module (found on some cloud machines)
// only runs PVM-enabled guests; qemu aborts with -cpu host there and the
// stock kernel crawls with anything else.
func KVMUsable() (bool, string) {
	if _, err := os.Stat("/sys/module/kvm_pvm"); err == nil {
		return false, "/dev/kvm is kvm_pvm, which cannot run Debian's kernel"
	}
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return false, fmt.Sprintf("/dev/kvm is not usable: %v", err)
	}
	f.Close()
	return true, ""
}

// kvmProbe is how long a KVM boot may take to get ready before vmrun falls
// back to TCG.
const kvmProbe = 30 * time.Second

// Run boots the VM, runs the job and returns the command's exit status. An
// error means the VM failed; its message says what to do next.
func Run(ctx context.Context, b *Boot) (*Result, error) {
	logf := b.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	accel := b.Accel
	arch := b.arch()
	if arch.Name != runtime.GOARCH {
		// Another architecture's guest is emulated whatever -accel says.
		if accel == "kvm" {
			return nil, fmt.Errorf("-accel kvm: an %s guest cannot run under KVM on this %s host; use -accel tcg", arch.Name, runtime.GOARCH)
		}
		accel = "tcg"
	}
	if accel == "" || accel == "auto" {
		accel = "tcg"
		if ok, why := KVMUsable(); ok {
			accel = "kvm"
		} else {
			logf("using TCG: %s", why)
		}
	}
	res, err := b.run(ctx, accel, b.Accel != "kvm" && accel == "kvm")
	if errors.Is(err, errKVMProbe) {
		logf("KVM did not get the guest ready within %v; falling back to TCG", kvmProbe)
		accel = "tcg"
		res, err = b.run(ctx, accel, false)
	}
	// A kernel that panics before the guest is ready has run nothing of
	// the job, and under TCG boots do panic now and then for reasons of
	// the emulation: on a loaded host the IO-APIC timer check
	// (arch/x86/kernel/apic/io_apic.c, check_timer: "IO-APIC + timer
	// doesn't work") misses its ticks, and on 6.12 an int3 was once hit
	// inside enqueue_timer while the kernel patched its own text at boot
	// (text_poke_bp's breakpoint, seen by the other vCPU). That boot is
	// tried once more; a panic after the guest was ready is the job's and
	// is reported.
	if err != nil && errors.Is(err, errBootPanic) && ctx.Err() == nil {
		logf("%v; booting once more", firstLine(err.Error()))
		res, err = b.run(ctx, accel, false)
	}
	return res, err
}

// arch is the guest's architecture: the one the image was prepared for.
func (b *Boot) arch() *Arch {
	if b.Prepared != nil && b.Prepared.Arch != nil {
		return b.Prepared.Arch
	}
	return Arches[DefaultArch]
}

// errBootPanic is the kernel panicking before the guest said it was ready.
var errBootPanic = errors.New("the guest kernel panicked at boot, before the guest was ready")

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

var errKVMProbe = errors.New("kvm probe failed")

func (b *Boot) run(ctx context.Context, accel string, probe bool) (*Result, error) {
	tmp, err := os.MkdirTemp("", "vmrun-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	jobDir := filepath.Join(tmp, "job")
	if err := os.Mkdir(jobDir, 0o755); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(b.Job, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(jobDir, vmproto.JobFile), data, 0o644); err != nil {
		return nil, err
	}

	// The guest's serial console and the three virtio-serial ports connect
	// to unix sockets vmrun listens on.
	type sock struct {
		name string
		dst  io.Writer
		ln   *net.UnixListener
	}
	console := &ring{max: 1 << 20}
	var consoleDst io.Writer = console
	if b.Console != nil {
		consoleDst = io.MultiWriter(console, b.Console)
	}
	ctlR, ctlW := io.Pipe()
	socks := []*sock{
		{name: vmproto.PortStdout, dst: b.Stdout},
		{name: vmproto.PortStderr, dst: b.Stderr},
		{name: vmproto.PortControl, dst: ctlW},
	}
	if !b.Job.Shell {
		socks = append(socks, &sock{name: "console", dst: consoleDst})
	}
	for _, s := range socks {
		s.ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(tmp, s.name+".sock"), Net: "unix"})
		if err != nil {
			return nil, err
		}
		defer s.ln.Close()
	}

	// tsc=reliable: under TCG the kernel's boot-time check finds the
	// vCPUs' TSCs unsynchronized (they are one emulated counter, read
	// by threads the host schedules apart), marks the TSC unstable and
	// falls back to the HPET, which has no vDSO path (the vDSO's clock
	// modes are the TSC and the paravirtual clocks only:
	// arch/x86/include/asm/vdso/clocksource.h): every clock_gettime
	// becomes a system call
	// and an emulated HPET read. No real machine or KVM guest works that
	// way, and it costs most in programs that read the clock often, as
	// the Go runtime's scheduler does; make bench's counts would carry
	// it. The TSC is trusted instead, as on hardware.
	//
	// The arm64 guest (Arch) differs in the machine (virt), the console
	// (the PL011, ttyAMA0), the kernel image (vmlinuz) and in running
	// under multi-threaded TCG always; the devices are the same.
	arch := b.arch()
	qaccel := accel
	if accel == "tcg" {
		qaccel = arch.TCG
	}
	args := []string{
		"-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none", "-no-reboot",
		"-machine", arch.Machine, "-accel", qaccel, "-m", fmt.Sprint(b.Memory), "-smp", fmt.Sprint(b.CPUs),
		"-kernel", b.Kernel.Boot, "-initrd", b.Initrd,
		"-append", "console=" + arch.Console + " " + arch.Append,
		"-device", "virtio-serial-pci,id=vser",
	}
	if accel == "kvm" {
		args = append(args, "-cpu", "host")
	} else {
		args = append(args, "-cpu", arch.CPU)
	}
	if b.Job.Shell {
		args = append(args, "-serial", "mon:stdio")
	} else {
		args = append(args, "-chardev", "socket,id=con,path="+qemuEscape(filepath.Join(tmp, "console.sock")), "-serial", "chardev:con")
	}
	for i, s := range socks[:3] {
		id := fmt.Sprintf("port%d", i)
		args = append(args,
			"-chardev", fmt.Sprintf("socket,id=%s,path=%s", id, qemuEscape(filepath.Join(tmp, s.name+".sock"))),
			"-device", fmt.Sprintf("virtserialport,bus=vser.0,chardev=%s,name=%s", id, s.name))
	}
	shares := map[string]string{vmproto.JobTag: jobDir}
	for tag, dir := range b.Shares {
		shares[tag] = dir
	}
	i := 0
	for tag, dir := range shares {
		ro := ""
		if tag == vmproto.JobTag {
			ro = ",readonly=on"
		}
		args = append(args,
			"-fsdev", fmt.Sprintf("local,id=fs%d,path=%s,security_model=none%s", i, qemuEscape(dir), ro),
			"-device", fmt.Sprintf("virtio-9p-pci,fsdev=fs%d,mount_tag=%s", i, tag))
		i++
	}

	cmd := exec.Command(b.Qemu, args...)
	killWithParent(cmd)
	if b.Logf != nil {
		b.Logf("%s %s", b.Qemu, strings.Join(args, " "))
	}
	var qemuOut bytes.Buffer
	if b.Job.Shell {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = b.Stdin, b.Stdout, b.Stderr
	} else {
		cmd.Stdout, cmd.Stderr = &qemuOut, &qemuOut
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", b.Qemu, err)
	}
	qemuDone := make(chan error, 1)
	go func() { qemuDone <- cmd.Wait() }()

	// Accept qemu's connection on each socket and copy what arrives.
	var copies sync.WaitGroup
	for _, s := range socks {
		s := s
		copies.Add(1)
		go func() {
			defer copies.Done()
			if s.name == vmproto.PortControl {
				defer ctlW.Close()
			}
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			// Keep reading when the destination fails (a closed pipe):
			// otherwise the guest's writes would block until -timeout.
			_, _ = io.Copy(&drainOnError{w: s.dst}, c)
		}()
	}
	allMsgs := make(chan vmproto.Message, 8)
	msgs := allMsgs
	go func() {
		defer close(allMsgs)
		sc := bufio.NewScanner(ctlR)
		for sc.Scan() {
			if m, err := vmproto.Parse(sc.Text()); err == nil {
				allMsgs <- m
			}
		}
	}()

	res := &Result{Accel: accel, ExitCode: -1}
	var (
		guestErr string
		failure  error
		timeout  = time.NewTimer(b.Timeout)
		probeC   <-chan time.Time
		grace    <-chan time.Time
		qemuErr  error
	)
	defer timeout.Stop()
	if probe {
		probeC = time.After(kvmProbe)
	}
	kill := func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	}
wait:
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				msgs = nil
				continue
			}
			switch m.Kind {
			case "ready":
				res.Ready = time.Since(start)
				probeC = nil
			case "exit":
				res.ExitCode = m.Code
			case "error":
				guestErr = m.Text
			}
			if m.Kind != "ready" && grace == nil {
				// The guest powers off next; give it a moment.
				grace = time.After(15 * time.Second)
			}
		case qemuErr = <-qemuDone:
			break wait
		case <-probeC:
			kill()
			failure = errKVMProbe
		case <-grace:
			kill()
			grace = nil
		case <-timeout.C:
			kill()
			failure = fmt.Errorf("the guest did not finish within %v (-timeout): the command hangs or is slow, "+
				"or the guest is stuck; raise -timeout if it needs longer", b.Timeout)
		case <-ctx.Done():
			kill()
			failure = fmt.Errorf("interrupted: %w", ctx.Err())
		}
	}
	res.Total = time.Since(start)

	// qemu is gone, so every socket reaches EOF; wait for the copies (and
	// the last control messages) with a bound in case a connection never
	// came.
	for _, s := range socks {
		s.ln.Close()
	}
	copied := make(chan struct{})
	go func() { copies.Wait(); close(copied) }()
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
	}
	ctlW.Close()
	for m := range allMsgs {
		switch m.Kind {
		case "exit":
			res.ExitCode = m.Code
		case "error":
			guestErr = m.Text
		}
	}

	if errors.Is(failure, errKVMProbe) {
		return nil, failure
	}
	if failure != nil {
		return nil, b.explain(failure, console, qemuOut.String())
	}
	if guestErr != "" {
		return nil, b.explain(fmt.Errorf("the guest could not run the command: %s", guestErr), console, qemuOut.String())
	}
	if res.ExitCode < 0 {
		var why error
		switch line := console.find("Kernel panic"); {
		case line != "" && res.Ready == 0:
			why = fmt.Errorf("%w: %s", errBootPanic, line)
		case line != "":
			why = fmt.Errorf("the guest kernel panicked: %s", line)
		case qemuErr != nil:
			why = fmt.Errorf("qemu failed (%v) before the guest reported an exit status", qemuErr)
		default:
			why = errors.New("the guest stopped without reporting an exit status")
		}
		return nil, b.explain(why, console, qemuOut.String())
	}
	return res, nil
}

// explain adds the end of the console and qemu's own output to err and
// saves the whole console log.
func (b *Boot) explain(err error, console *ring, qemuOut string) error {
	var sb strings.Builder
	sb.WriteString(err.Error())
	if s := strings.TrimSpace(qemuOut); s != "" {
		fmt.Fprintf(&sb, "\nqemu said:\n%s", tail(s, 20))
	}
	if c := console.String(); strings.TrimSpace(c) != "" {
		fmt.Fprintf(&sb, "\nlast lines of the guest console:\n%s", tail(strings.ReplaceAll(c, "\r", ""), 25))
		dir := filepath.Join(b.Cache, "logs")
		if os.MkdirAll(dir, 0o755) == nil {
			name := filepath.Join(dir, fmt.Sprintf("console-%s-%s-%d.log", b.arch().cacheName(b.Kernel.Label), time.Now().Format("20060102-150405"), os.Getpid()))
			if os.WriteFile(name, []byte(c), 0o644) == nil {
				fmt.Fprintf(&sb, "\nfull console log: %s", name)
			}
			pruneLogs(dir, 20)
		}
	}
	sb.WriteString("\nrerun with -v to watch the guest console")
	return &vmError{msg: sb.String(), err: err}
}

// vmError is a VM failure with the console's and qemu's last words in its
// message; errors.Is sees the failure it explains.
type vmError struct {
	msg string
	err error
}

func (e *vmError) Error() string { return e.msg }
func (e *vmError) Unwrap() error { return e.err }

// qemuEscape doubles commas, qemu's option separator.
func qemuEscape(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// ring keeps the last max bytes written to it.
type ring struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	if len(r.buf) > r.max {
		r.buf = append([]byte(nil), r.buf[len(r.buf)-r.max:]...)
	}
	return len(p), nil
}

func (r *ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.buf)
}

// find returns the first line that contains s.
func (r *ring) find(s string) string {
	for _, line := range strings.Split(r.String(), "\n") {
		if strings.Contains(line, s) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// pruneLogs keeps the newest keep console logs in dir.
func pruneLogs(dir string, keep int) {
	logs, _ := filepath.Glob(filepath.Join(dir, "console-*.log"))
	if len(logs) <= keep {
		return
	}
	type aged struct {
		name string
		mod  time.Time
	}
	var all []aged
	for _, l := range logs {
		if st, err := os.Stat(l); err == nil {
			all = append(all, aged{l, st.ModTime()})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mod.After(all[j].mod) })
	for _, a := range all[min(keep, len(all)):] {
		os.Remove(a.name)
	}
}

// drainOnError passes writes to w until one fails, then discards them.
type drainOnError struct {
	w      io.Writer
	failed bool
}

func (d *drainOnError) Write(p []byte) (int, error) {
	if !d.failed {
		if _, err := d.w.Write(p); err != nil {
			d.failed = true
		}
	}
	return len(p), nil
}
