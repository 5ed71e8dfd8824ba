// Command vmrun runs a command inside a qemu VM that boots one of Debian's
// stock kernels with two Soft-RoCE devices, rxe0 and rxe1, on the two ends
// of a veth pair, both ACTIVE:
//
//	go run ./integration/vmrun [flags] -- COMMAND [ARGS...]
//	go run ./integration/vmrun -shell
//
// It downloads what it needs with apt (qemu-system-x86 if missing, the
// pinned kernel and userland packages), caches it under integration/.cache
// and rebuilds the guest's initramfs only when an input changed.
//
// The repository is mounted in the guest over 9p at the same absolute path
// as on the host, and COMMAND runs in the same directory (when that is in
// the repository) as root, or as -user. The project's commands (cmd/*,
// built with CGO_ENABLED=0) come first on PATH, then rdma-core's tools
// (ibv_devinfo, ibstat, perfquery, ibv_rc_pingpong, rdma, strace, ...).
// COMMAND's standard output and standard error come back separately, on
// virtio-serial ports; the guest's kernel messages stay out of them (-v
// shows the console on standard error). Standard input is /dev/null.
//
// vmrun exits with COMMAND's exit status, or 125 when the VM failed: it
// could not boot or set up the devices, the guest kernel panicked, or the
// run took longer than -timeout. Because the program COMMAND names is
// copied into the guest when it lies outside the repository, vmrun works
// as go test's -exec wrapper:
//
//	go test -tags integration -exec 'vmrun -kernel 6.12 --' ./...
//
// It uses KVM only where /dev/kvm can run Debian's kernel (not with
// kvm_pvm); otherwise qemu's TCG emulation, which boots in about 4 s.
//
// -arch arm64 boots the same kernels and userland built for arm64 under
// qemu-system-aarch64 (-machine virt -cpu max, always emulated), with the
// project's commands and the init built with GOARCH=arm64; go test's test
// binaries must be built for arm64 too:
//
//	GOARCH=arm64 go test -tags integration -exec 'vmrun -arch arm64 -kernel 6.12 --' ./uverbs
//
// The arm64 guest has no test device mock0 (integration/mockrdma is built
// for amd64 only).
package main

import (
	"context"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/purerdma/rdma/integration/internal/vm"
	"github.com/purerdma/rdma/integration/internal/vmproto"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	var status exitStatus
	var usage usageError
	switch {
	case err == nil:
	case errors.As(err, &status):
		os.Exit(int(status))
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "vmrun: %v\n", err)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "vmrun: %v\n", err)
		os.Exit(vm.HarnessExit)
	}
}

// exitStatus is the guest command's non-zero exit status.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("the command exited with status %d", int(e)) }

// usageError is a mistake in the command line.
type usageError struct{ error }

// envList collects repeated -env NAME=VALUE flags.
type envList []string

func (e *envList) String() string { return strings.Join(*e, " ") }

func (e *envList) Set(s string) error {
	if !strings.Contains(s, "=") || strings.HasPrefix(s, "=") {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	*e = append(*e, s)
	return nil
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("vmrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		kernel  = fs.String("kernel", vm.DefaultKernel, "guest kernel: "+strings.Join(vm.KernelLabels(), " or "))
		archF   = fs.String("arch", vm.DefaultArch, "guest architecture: "+strings.Join(vm.ArchNames(), " or ")+" (arm64 is emulated)")
		user    = fs.String("user", "", "run COMMAND as this unprivileged user (uid 1000), created in the guest")
		shell   = fs.Bool("shell", false, "open an interactive shell in the guest instead of running COMMAND")
		timeout = fs.Duration("timeout", 5*time.Minute, "fail if the VM has not finished after this long")
		verbose = fs.Bool("v", false, "show the guest console and timings on standard error")
		accel   = fs.String("accel", "auto", "qemu accelerator: auto, tcg or kvm")
		cmds    = fs.Bool("cmds", true, "build the project's cmd/* and put them first on the guest's PATH")
		prepare = fs.Bool("prepare", false, "only download and build what the VM needs, then exit")
		memory  = fs.Int("m", 1024, "guest memory in MiB")
		cpus    = fs.Int("smp", 2, "guest CPUs (ibv_rc_pingpong busy-polls: keep 2 or more)")
		mock    = fs.Bool("mock", true, "load the test-only mlx5-model device mock0 (integration/mockrdma) on veth1 (amd64 only)")
		mockPar = fs.String("mock-params", "", "extra module parameters for mock0, e.g. \"dyn_uar=0 steal=0\"")
		env     envList
	)
	fs.Var(&env, "env", "set NAME=VALUE in COMMAND's environment (repeatable)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: vmrun [flags] -- COMMAND [ARGS...]\n       vmrun [flags] -shell\n\n"+
			"Runs COMMAND as root in a qemu VM with Soft-RoCE devices rxe0 and rxe1 ACTIVE,\n"+
			"the repository mounted at its host path, and exits with COMMAND's status\n"+
			"(125 when the VM itself failed).\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	command := fs.Args()
	switch {
	case *prepare:
	case *shell && len(command) > 0:
		return usageError{errors.New("-shell takes no COMMAND")}
	case !*shell && len(command) == 0:
		fs.Usage()
		return usageError{errors.New("no COMMAND given (put it after --), and no -shell")}
	}
	arch, err := vm.GetArch(*archF)
	if err != nil {
		return usageError{err}
	}
	if _, err := arch.Kernel(*kernel); err != nil {
		return usageError{err}
	}
	switch *accel {
	case "auto", "tcg", "kvm":
	default:
		return usageError{fmt.Errorf("-accel must be auto, tcg or kvm, not %q", *accel)}
	}
	if *user != "" && (*user == "root" || strings.ContainsAny(*user, ":/ \n")) {
		return usageError{fmt.Errorf("-user %q: give a plain name other than root", *user)}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "vmrun: "+format+"\n", a...) }
	vlogf := func(string, ...any) {}
	if *verbose {
		vlogf = logf
	}

	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	repo, err := findRepo(cwd)
	if err != nil {
		return err
	}
	t0 := time.Now()
	p, err := vm.Prepare(ctx, vm.Options{Repo: repo, Arch: arch.Name, Kernel: *kernel, BuildCommands: *cmds, Logf: logf})
	if err != nil {
		return err
	}
	vlogf("prepared in %v: %s kernel %s (%s), image %s", time.Since(t0).Round(time.Millisecond),
		arch.Name, p.Kernel.Release, filepath.Base(p.Kernel.Boot), p.Initrd)
	if *prepare {
		return nil
	}

	job := vmproto.Job{
		Kernel:     *kernel,
		Repo:       repo,
		Dir:        repo,
		Env:        env,
		User:       *user,
		Shell:      *shell,
		Shares:     []vmproto.Share{{Tag: "vmrun.repo", Path: repo}},
		NoMock:     !*mock || !arch.Mock,
		MockParams: *mockPar,
	}
	shares := map[string]string{"vmrun.repo": repo}
	if within(repo, cwd) {
		job.Dir = cwd
	}
	if p.Commands != "" {
		job.Path = []string{p.Commands}
	}
	if *shell {
		job.Term = os.Getenv("TERM")
		if ws, err := unix.IoctlGetWinsize(int(os.Stdin.Fd()), unix.TIOCGWINSZ); err == nil {
			job.Rows, job.Cols = ws.Row, ws.Col
		}
	} else {
		job.Args = append([]string(nil), command...)
		// A program outside the repository (go test's test binary in its
		// temporary directory) is not in the guest: bring a copy.
		if exe, ok := hostProgram(command[0], cwd, repo); ok {
			if err := checkMachine(exe, arch.Name); err != nil {
				return usageError{err}
			}
			dir, err := os.MkdirTemp("", "vmrun-exe-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			if err := os.Chmod(dir, 0o755); err != nil {
				return err
			}
			if err := copyFile(exe, filepath.Join(dir, filepath.Base(exe))); err != nil {
				return fmt.Errorf("copy %s for the guest: %w", exe, err)
			}
			const mnt = "/run/vmrun/exe"
			shares["vmrun.exe"] = dir
			job.Shares = append(job.Shares, vmproto.Share{Tag: "vmrun.exe", Path: mnt, ReadOnly: true})
			job.Args[0] = filepath.Join(mnt, filepath.Base(exe))
		}
	}

	boot := &vm.Boot{
		Prepared: p,
		Job:      job,
		Shares:   shares,
		Accel:    *accel,
		Timeout:  *timeout,
		Memory:   *memory,
		CPUs:     *cpus,
		Stdin:    os.Stdin,
		Stdout:   stdout,
		Stderr:   stderr,
		Logf:     vlogf,
	}
	if *verbose {
		boot.Console = stderr
	}
	res, err := vm.Run(ctx, boot)
	if err != nil {
		return err
	}
	vlogf("%s: guest ready after %v, finished after %v (host wall clock from qemu's start)",
		res.Accel, res.Ready.Round(time.Millisecond), res.Total.Round(time.Millisecond))
	if res.ExitCode != 0 {
		return exitStatus(res.ExitCode)
	}
	return nil
}

// findRepo returns the repository's root above dir: the directory of the
// library's go.mod (module github.com/purerdma/rdma), so that a package of
// the exporter's own module (cmd/rdma_exporter, with a go.mod of its own)
// finds the same root as the library's packages.
func findRepo(dir string) (string, error) {
	first := ""
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			if first == "" {
				first = d
			}
			if strings.HasPrefix(string(b), "module "+repoModule+"\n") {
				return d, nil
			}
		}
		if filepath.Dir(d) == d {
			if first != "" {
				return first, nil
			}
			return "", fmt.Errorf("%s is not inside the repository (no go.mod above it); run vmrun from the repository", dir)
		}
	}
}

// repoModule is the library's module path, the first line of the
// repository root's go.mod.
const repoModule = "github.com/purerdma/rdma"

// within reports whether path is dir or lies below it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// hostProgram reports whether name is a path to a host file outside the
// repository, and returns its absolute path.
func hostProgram(name, cwd, repo string) (string, bool) {
	if !strings.Contains(name, "/") {
		return "", false
	}
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	if within(repo, p) {
		return "", false
	}
	// The guest's own programs and pseudo files.
	for _, sys := range []string{"/bin", "/sbin", "/usr", "/lib", "/lib64", "/etc", "/proc", "/sys", "/dev", "/run"} {
		if within(sys, p) {
			return "", false
		}
	}
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		return "", false
	}
	return p, true
}

// checkMachine refuses an ELF program built for another architecture
// than the guest's (go test without GOARCH=arm64 for -arch arm64), which
// the guest would only fail to execute. Scripts pass.
func checkMachine(exe, arch string) error {
	f, err := elf.Open(exe)
	if err != nil {
		return nil
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != want {
		return fmt.Errorf("%s is built for %v, not for the %s guest (set GOARCH=%s when building it)", exe, f.Machine, arch, arch)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
