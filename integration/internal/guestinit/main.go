//go:build linux

// Command guestinit is the /init of the vmrun guest. vmrun builds it with
// CGO_ENABLED=0 and puts it into the initramfs; it is not meant to be run
// anywhere else.
//
// As PID 1 it mounts the pseudo file systems, loads the kernel modules the
// image lists, mounts the host's 9p shares, creates a veth pair with a
// Soft-RoCE device on each end (rxe0 on veth0, rxe1 on veth1, created with
// netlink's RDMA_NLDEV_CMD_NEWLINK, the call behind "rdma link add"), waits
// until both ports are ACTIVE with a usable GID 0, runs the job's command and
// reports its exit status to the host before it powers the machine off.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/purerdma/rdma/integration/internal/vmproto"
)

func main() {
	g := &guest{console: os.Stdout}
	if err := g.run(); err != nil {
		g.logf("error: %v", err)
		if g.ctl != nil {
			_, _ = io.WriteString(g.ctl, vmproto.Error(err))
		}
	}
	g.poweroff()
}

type guest struct {
	console io.Writer
	ctl     *os.File
	job     vmproto.Job
}

func (g *guest) logf(format string, args ...any) {
	fmt.Fprintf(g.console, "vmrun-init: [%6.2fs] %s\n", uptime(), fmt.Sprintf(format, args...))
}

func (g *guest) run() error {
	if err := mountBase(); err != nil {
		return err
	}
	// busybox's applets as symlinks; existing files (iproute2's ip) stay.
	if out, err := exec.Command("/bin/busybox", "--install", "-s").CombinedOutput(); err != nil {
		return fmt.Errorf("busybox --install: %v: %s", err, out)
	}
	if err := g.loadModules(); err != nil {
		return err
	}
	ctl, err := openPort(vmproto.PortControl, 10*time.Second)
	if err != nil {
		return err
	}
	g.ctl = ctl
	if err := g.readJob(); err != nil {
		return err
	}
	for _, s := range g.job.Shares {
		if err := mount9p(s.Tag, s.Path, s.ReadOnly); err != nil {
			return err
		}
	}
	if err := setupRDMA(); err != nil {
		return err
	}
	g.logf("rxe0 and rxe1 ACTIVE")
	if !g.job.NoMock {
		if err := setupMock(g.job.MockParams); err != nil {
			return err
		}
		g.logf("%s ACTIVE on %s", vmproto.MockDev, vmproto.MockNetDev)
	}
	if g.job.User != "" {
		if err := addUser(g.job.User); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(g.ctl, vmproto.Ready(uptime())); err != nil {
		return fmt.Errorf("write to the control port: %w", err)
	}
	code, err := g.runJob()
	if err != nil {
		return err
	}
	g.logf("command exited with status %d", code)
	if _, err := io.WriteString(g.ctl, vmproto.Exit(code)); err != nil {
		return fmt.Errorf("write to the control port: %w", err)
	}
	return nil
}

func (g *guest) poweroff() {
	unix.Sync()
	if g.ctl != nil {
		_ = g.ctl.Close()
	}
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
		g.logf("power off: %v", err)
	}
	// Returning from PID 1 panics the kernel, which (panic=-1, qemu
	// -no-reboot) also ends the VM.
}

// mountBase mounts /proc, /sys, /dev and the tmpfs directories.
func mountBase() error {
	mounts := []struct {
		src, dst, fstype, data string
		flags                  uintptr
	}{
		{"proc", "/proc", "proc", "", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
		{"sysfs", "/sys", "sysfs", "", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
		{"debugfs", "/sys/kernel/debug", "debugfs", "", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
		{"devtmpfs", "/dev", "devtmpfs", "mode=0755", unix.MS_NOSUID},
		{"devpts", "/dev/pts", "devpts", "gid=5,mode=620,ptmxmode=666", unix.MS_NOSUID | unix.MS_NOEXEC},
		{"tmpfs", "/dev/shm", "tmpfs", "mode=1777", unix.MS_NOSUID | unix.MS_NODEV},
		{"tmpfs", "/tmp", "tmpfs", "mode=1777", unix.MS_NOSUID | unix.MS_NODEV},
		{"tmpfs", "/run", "tmpfs", "mode=0755", unix.MS_NOSUID | unix.MS_NODEV},
	}
	for _, m := range mounts {
		if err := os.MkdirAll(m.dst, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.src, m.dst, m.fstype, m.flags, m.data); err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.dst, err)
		}
	}
	return nil
}

// loadModules loads the modules the image lists, in order, with
// finit_module; the list already holds each module's dependencies first.
func (g *guest) loadModules() error {
	release, err := os.ReadFile(vmproto.ReleaseFile)
	if err != nil {
		return err
	}
	list, err := os.ReadFile(vmproto.ModulesFile)
	if err != nil {
		return err
	}
	dir := filepath.Join("/lib/modules", strings.TrimSpace(string(release)))
	n := 0
	for _, rel := range strings.Fields(string(list)) {
		if err := loadModule(filepath.Join(dir, rel)); err != nil {
			return err
		}
		n++
	}
	g.logf("loaded %d modules", n)
	return nil
}

func loadModule(path string) error { return loadModuleParams(path, "") }

func loadModuleParams(path, params string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	err = unix.FinitModule(int(f.Fd()), params, 0)
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("load module %s: %w", filepath.Base(path), err)
	}
	return nil
}

// openPort opens the virtio-serial port with the given name. Without udev
// there is no /dev/virtio-ports/NAME link, so the name is looked up in sysfs.
func openPort(name string, wait time.Duration) (*os.File, error) {
	deadline := time.Now().Add(wait)
	for {
		ents, _ := os.ReadDir("/sys/class/virtio-ports")
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join("/sys/class/virtio-ports", e.Name(), "name"))
			if err != nil || strings.TrimSpace(string(b)) != name {
				continue
			}
			f, err := os.OpenFile(filepath.Join("/dev", e.Name()), os.O_WRONLY, 0)
			if err == nil {
				return f, nil
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("open virtio port %s: %w", name, err)
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("virtio-serial port %s did not appear within %v", name, wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func mount9p(tag, dir string, ro bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var flags uintptr
	if ro {
		flags |= unix.MS_RDONLY
	}
	opts := "trans=virtio,version=9p2000.L,msize=262144,cache=none"
	// The 9p device may be probed a little after the module loads; the
	// sysfs mount_tag file is not a reliable signal, so retry the mount.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := unix.Mount(tag, dir, "9p", flags, opts)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mount 9p share %q on %s: %w", tag, dir, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (g *guest) readJob() error {
	if err := mount9p(vmproto.JobTag, vmproto.JobMount, true); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(vmproto.JobMount, vmproto.JobFile))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &g.job); err != nil {
		return fmt.Errorf("parse %s: %w", vmproto.JobFile, err)
	}
	return nil
}

// setupRDMA creates veth0/veth1 and the rxe devices on them and waits until
// both ports are ACTIVE and GID 0 is set.
func setupRDMA() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("set lo up: %w", err)
	}
	// Without duplicate address detection the fe80:: address (GID 0) is
	// usable at once instead of staying tentative for a second or two.
	for _, k := range []string{"all", "default"} {
		if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+k+"/accept_dad", []byte("0"), 0o644); err != nil {
			return err
		}
	}
	var macs [2]net.HardwareAddr
	for i, m := range vmproto.MACs {
		if macs[i], err = net.ParseMAC(m); err != nil {
			return err
		}
	}
	veth := &netlink.Veth{
		LinkAttrs:        netlink.LinkAttrs{Name: vmproto.NetDevs[0], HardwareAddr: macs[0]},
		PeerName:         vmproto.NetDevs[1],
		PeerHardwareAddr: macs[1],
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("add veth pair %s/%s: %w", vmproto.NetDevs[0], vmproto.NetDevs[1], err)
	}
	for i, name := range vmproto.NetDevs {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return err
		}
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(vmproto.Addrs[i]), Mask: net.CIDRMask(24, 32)}}
		if err := netlink.AddrAdd(l, addr); err != nil {
			return fmt.Errorf("add %s to %s: %w", vmproto.Addrs[i], name, err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return fmt.Errorf("set %s up: %w", name, err)
		}
	}
	for i, dev := range vmproto.RDMADevs {
		if err := netlink.RdmaLinkAdd(dev, "rxe", vmproto.NetDevs[i]); err != nil {
			return fmt.Errorf("add rdma link %s (type rxe) on %s: %w", dev, vmproto.NetDevs[i], err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, dev := range vmproto.RDMADevs {
		port := filepath.Join("/sys/class/infiniband", dev, "ports/1")
		for {
			state, _ := os.ReadFile(port + "/state")
			gid, _ := os.ReadFile(port + "/gids/0")
			if strings.TrimSpace(string(state)) == "4: ACTIVE" && usableGID(string(gid)) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s port 1 not ACTIVE with a GID 0 after 30s (state %q, gid0 %q)",
					dev, strings.TrimSpace(string(state)), strings.TrimSpace(string(gid)))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// setupMock loads the test-only module (integration/mockrdma) bound to
// MockNetDev, with extra parameters, and waits until its port is ACTIVE.
func setupMock(params string) error {
	p := strings.TrimSpace("netdev=" + vmproto.MockNetDev + " " + params)
	if err := loadModuleParams(vmproto.MockModule, p); err != nil {
		return fmt.Errorf("%w (vmrun -mock=false boots without it)", err)
	}
	state := filepath.Join("/sys/class/infiniband", vmproto.MockDev, "ports/1/state")
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(state)
		if strings.TrimSpace(string(b)) == "4: ACTIVE" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s port 1 not ACTIVE after 30s (state %q)", vmproto.MockDev, strings.TrimSpace(string(b)))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func usableGID(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && strings.Trim(s, "0:") != ""
}

func addUser(name string) error {
	home := "/home/" + name
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	if err := os.Chown(home, vmproto.GuestUID, vmproto.GuestGID); err != nil {
		return err
	}
	for file, line := range map[string]string{
		"/etc/passwd": fmt.Sprintf("%s:x:%d:%d::%s:/bin/sh\n", name, vmproto.GuestUID, vmproto.GuestGID, home),
		"/etc/group":  fmt.Sprintf("%s:x:%d:\n", name, vmproto.GuestGID),
	} {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteString(line)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// env returns the command's environment; it also becomes the init's own, so
// that exec.LookPath searches the guest's PATH.
func (g *guest) env() []string {
	j := g.job
	path := append(append([]string{}, j.Path...), "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
	user, home := "root", "/root"
	if j.User != "" {
		user, home = j.User, "/home/"+j.User
	}
	term := j.Term
	if term == "" {
		term = "linux"
	}
	env := []string{
		"PATH=" + strings.Join(path, ":"),
		"HOME=" + home,
		"USER=" + user,
		"LOGNAME=" + user,
		"SHELL=/bin/sh",
		"TERM=" + term,
		"TMPDIR=/tmp",
		vmproto.EnvGuest + "=1",
		vmproto.EnvKernel + "=" + j.Kernel,
		vmproto.EnvRepo + "=" + j.Repo,
	}
	return append(env, j.Env...)
}

// runJob runs the command (or the shell) and returns its exit status. An
// error means the init itself failed.
func (g *guest) runJob() (int, error) {
	env := g.env()
	os.Clearenv()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		_ = os.Setenv(k, v)
	}
	dir := g.job.Dir
	if dir == "" {
		dir = "/"
	}
	var cmd *exec.Cmd
	attr := &syscall.SysProcAttr{}
	if g.job.Shell {
		tty, err := os.OpenFile(consoleTTY(), os.O_RDWR, 0)
		if err != nil {
			return 0, err
		}
		defer tty.Close()
		if g.job.Rows > 0 && g.job.Cols > 0 {
			_ = unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: g.job.Rows, Col: g.job.Cols})
		}
		fmt.Fprintf(tty, "\nvmrun: shell in the guest (kernel %s); rxe0 and rxe1 are ACTIVE.\n"+
			"vmrun: 'exit' or Ctrl-D powers the VM off; Ctrl-A X kills qemu.\n\n", g.job.Kernel)
		cmd = exec.Command("/bin/sh", "-l")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		cmd.Env = append(env, `PS1=vm:\w\$ `)
		attr.Setsid, attr.Setctty, attr.Ctty = true, true, 0
	} else {
		stdout, err := openPort(vmproto.PortStdout, 5*time.Second)
		if err != nil {
			return 0, err
		}
		defer stdout.Close()
		stderr, err := openPort(vmproto.PortStderr, 5*time.Second)
		if err != nil {
			return 0, err
		}
		defer stderr.Close()
		if len(g.job.Args) == 0 {
			return 0, errors.New("the job has no command")
		}
		cmd = exec.Command(g.job.Args[0], g.job.Args[1:]...)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		cmd.Env = env
		if err := cmd.Err; err != nil {
			fmt.Fprintf(stderr, "vmrun: %s: %v\n", g.job.Args[0], err)
			return 127, nil
		}
	}
	cmd.Dir = dir
	if g.job.User != "" {
		attr.Credential = &syscall.Credential{Uid: vmproto.GuestUID, Gid: vmproto.GuestGID}
	}
	cmd.SysProcAttr = attr
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return exitErr.ExitCode(), nil
	default:
		if !g.job.Shell {
			fmt.Fprintf(cmd.Stderr, "vmrun: %s: %v\n", g.job.Args[0], err)
		}
		if errors.Is(err, os.ErrPermission) {
			return 126, nil
		}
		return 127, nil
	}
}

// consoleTTY is the serial console the shell runs on: the PC's first UART
// on amd64, the virt board's PL011 on arm64 (vmrun -arch arm64).
func consoleTTY() string {
	if runtime.GOARCH == "arm64" {
		return "/dev/ttyAMA0"
	}
	return "/dev/ttyS0"
}

// uptime reads the guest's clock since boot in seconds.
func uptime() float64 {
	f, err := os.Open("/proc/uptime")
	if err != nil {
		return 0
	}
	defer f.Close()
	s, _ := bufio.NewReader(f).ReadString(' ')
	v, _ := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return v
}
