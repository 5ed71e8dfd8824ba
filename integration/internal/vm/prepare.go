// Package vm is the host side of vmrun: it fetches Debian's kernel and
// userland packages, builds the guest's initramfs, and boots it with qemu.
//
// Everything it downloads or builds is kept under integration/.cache in the
// repository (git ignores it):
//
//	debs/              the pinned .deb files (see packages.go)
//	kernel/NAME_VER/   an unpacked kernel package plus its vmlinux
//	userland/HASH/     the userland packages unpacked into one tree
//	headers/LABEL/     a kernel's header and kbuild packages, unpacked
//	mockrdma/LABEL/    the test-only module built for that kernel (+ .stamp)
//	extras/            packages tests run from the share (Prometheus)
//	image/LABEL/       the guest init binary and the initramfs (+ .stamp)
//	guest-bin/         the project's cmd/* built with CGO_ENABLED=0
//	logs/              console logs of failed runs
//
// Those are the amd64 guest's. The arm64 guest's (-arch arm64) are
// debs-arm64/, image-arm64/LABEL/ and guest-bin-arm64/, next to them; its
// kernel and userland trees are named after its own packages, and it has
// no headers, mockrdma or extras (Arch.Mock, Arch.Extras).
package vm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/purerdma/rdma/integration/internal/vmproto"
)

// guestPrograms are built with CGO_ENABLED=0 into the image: path in the
// guest -> package.
var guestPrograms = map[string]string{
	"/init":                      "./integration/internal/guestinit",
	"/usr/local/bin/rdmacapture": "./integration/internal/rdmacapture",
	"/usr/local/bin/sendframes":  "./integration/internal/sendframes",
}

// Options says what to prepare.
type Options struct {
	Repo          string // repository root
	Arch          string // -arch: "amd64" (the default when empty) or "arm64"
	Kernel        string // -kernel label
	BuildCommands bool   // build the project's cmd/* for the guest's PATH
	Logf          func(format string, args ...any)
}

// Prepared is what a boot needs.
type Prepared struct {
	Arch     *Arch
	Qemu     string
	Kernel   *Kernel
	Initrd   string
	Commands string // directory of the project's commands; "" when there are none
	Cache    string
}

// CacheDir returns the cache directory of the repository.
func CacheDir(repo string) string { return filepath.Join(repo, "integration", ".cache") }

// Prepare installs qemu if needed, downloads and unpacks the packages and
// (re)builds the guest image and the project's commands. It holds a lock on
// the cache meanwhile, so that concurrent vmruns do not race.
func Prepare(ctx context.Context, opt Options) (*Prepared, error) {
	logf := opt.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	arch, err := GetArch(opt.Arch)
	if err != nil {
		return nil, err
	}
	kpkg, err := arch.Kernel(opt.Kernel)
	if err != nil {
		return nil, err
	}
	cache := CacheDir(opt.Repo)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	unlock, err := lock(filepath.Join(cache, "lock"), func() {
		logf("waiting for another vmrun to finish preparing %s", cache)
	})
	if err != nil {
		return nil, err
	}
	defer unlock()

	p := &Prepared{Arch: arch, Cache: cache}
	if p.Qemu, err = EnsureQemu(ctx, arch, logf); err != nil {
		return nil, err
	}
	if err := EnsureForeignArch(ctx, arch, logf); err != nil {
		return nil, err
	}
	debDir := filepath.Join(cache, arch.cacheName("debs"))
	hdrs := arch.headers[opt.Kernel]
	want := append(append([]Package{kpkg}, hdrs...), userland...)
	debs, err := Download(ctx, debDir, arch, want, logf)
	if err != nil {
		return nil, err
	}
	kdeb, hdebs, udebs := debs[0], debs[1:1+len(hdrs)], debs[1+len(hdrs):]

	kdir := filepath.Join(cache, "kernel", kpkg.Name+"_"+kpkg.Version)
	if _, err := os.Stat(filepath.Join(kdir, ".complete")); err != nil {
		logf("unpacking %s (once per kernel)", filepath.Base(kdeb))
	}
	if p.Kernel, err = UnpackKernel(ctx, kdeb, kdir, opt.Kernel, kpkg, arch.PVH); err != nil {
		return nil, err
	}
	udir, err := unpackUserland(ctx, filepath.Join(cache, "userland"), udebs)
	if err != nil {
		return nil, err
	}

	idir := filepath.Join(cache, arch.cacheName("image"), opt.Kernel)
	if err := os.MkdirAll(idir, 0o755); err != nil {
		return nil, err
	}
	// The guest's own Go programs: the init and rdmacapture.
	// One go build for all of them: go build -o DIR/ names each binary
	// after its package's directory.
	progs := map[string]string{}
	var pkgs []string
	for guest, pkg := range guestPrograms {
		pkgs = append(pkgs, pkg)
		progs[guest] = filepath.Join(idir, path.Base(pkg))
	}
	sort.Strings(pkgs)
	if err := goBuild(ctx, arch, opt.Repo, idir+string(filepath.Separator), pkgs...); err != nil {
		return nil, fmt.Errorf("build the guest's programs: %w", err)
	}
	// Programs tests run from the share rather than from the image.
	if arch.Extras {
		xdebs, err := Download(ctx, debDir, arch, extras, logf)
		if err != nil {
			return nil, err
		}
		if err := unpackExtras(ctx, filepath.Join(cache, "extras"), xdebs); err != nil {
			return nil, err
		}
	}

	// The test-only mlx5-model device (integration/mockrdma), built
	// against this kernel's headers.
	files := map[string]string{}
	if arch.Mock {
		ko, err := buildMock(ctx, opt.Repo, cache, opt.Kernel, hdebs, logf)
		if err != nil {
			return nil, err
		}
		files[vmproto.MockModule] = ko
	}
	p.Initrd = filepath.Join(idir, "initrd.cpio")
	built, err := BuildImage(ctx, ImageInputs{Arch: arch, Kernel: p.Kernel, Userland: udir, Debs: udebs, Programs: progs, Files: files}, p.Initrd)
	if err != nil {
		return nil, fmt.Errorf("build the guest image: %w", err)
	}
	if built {
		logf("built the guest image %s for kernel %s", p.Initrd, p.Kernel.Release)
	}
	if opt.BuildCommands {
		if p.Commands, err = buildCommands(ctx, arch, opt.Repo, filepath.Join(cache, arch.cacheName("guest-bin"))); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// lock takes an exclusive flock on file, calling waiting if someone else
// holds it for more than a moment (a download, an image build).
func lock(file string, waiting func()) (func(), error) {
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	t := time.AfterFunc(2*time.Second, waiting)
	defer t.Stop()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", file, err)
	}
	return func() { f.Close() }, nil
}

// unpackUserland unpacks the userland packages into one tree, named after
// the set of packages, once.
func unpackUserland(ctx context.Context, parent string, debs []string) (string, error) {
	h := sha256.New()
	for _, d := range debs {
		fmt.Fprintln(h, filepath.Base(d))
	}
	dir := filepath.Join(parent, hex.EncodeToString(h.Sum(nil))[:16])
	_, err := unpackOnce(ctx, dir, debs)
	return dir, err
}

// unpackExtras unpacks the extra packages into dir, again whenever the set
// of packages changes.
func unpackExtras(ctx context.Context, dir string, debs []string) error {
	_, err := unpackOnce(ctx, dir, debs)
	return err
}

// unpackOnce unpacks debs into dir unless dir/.complete says it holds
// exactly those packages: into dir.tmp first, renamed when whole, so an
// interrupted unpack is redone. It reports whether it unpacked.
func unpackOnce(ctx context.Context, dir string, debs []string) (bool, error) {
	var names strings.Builder
	for _, d := range debs {
		fmt.Fprintln(&names, filepath.Base(d))
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".complete")); err == nil && string(b) == names.String() {
		return false, nil
	}
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return false, err
	}
	for _, d := range debs {
		if err := unpackDeb(ctx, d, tmp); err != nil {
			return false, err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), []byte(names.String()), 0o644); err != nil {
		return false, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return false, err
	}
	return true, os.Rename(tmp, dir)
}

// goTool returns the go command: the one on PATH, else the one in GOROOT.
func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("the go command is not on PATH; add Go's bin directory to PATH")
}

func goBuild(ctx context.Context, arch *Arch, repo, out string, pkgs ...string) error {
	gobin, err := goTool()
	if err != nil {
		return err
	}
	args := append([]string{"build", "-trimpath", "-ldflags=-s -w", "-o", out}, pkgs...)
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir = repo
	cmd.Env = arch.GoEnv(os.Environ())
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

// buildCommands builds every main package under cmd/ into dir and returns
// dir, or "" when the repository has no commands yet.
func buildCommands(ctx context.Context, arch *Arch, repo, dir string) (string, error) {
	if st, err := os.Stat(filepath.Join(repo, "cmd")); err != nil || !st.IsDir() {
		return "", nil
	}
	gobin, err := goTool()
	if err != nil {
		return "", err
	}
	// ./cmd/... leaves out the commands that are modules of their own
	// (cmd/rdma_exporter: go.work joins it), so they are named too.
	patterns := []string{"./cmd/..."}
	if nested, err := filepath.Glob(filepath.Join(repo, "cmd", "*", "go.mod")); err == nil {
		for _, m := range nested {
			rel, err := filepath.Rel(repo, filepath.Dir(m))
			if err == nil {
				patterns = append(patterns, "./"+filepath.ToSlash(rel)+"/...")
			}
		}
	}
	cmd := exec.CommandContext(ctx, gobin, append([]string{"list", "-e", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`}, patterns...)...)
	cmd.Dir = repo
	cmd.Env = arch.GoEnv(os.Environ())
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %v", strings.Join(patterns, " "), err)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) == 0 {
		return "", nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := goBuild(ctx, arch, repo, dir+string(filepath.Separator), pkgs...); err != nil {
		return "", fmt.Errorf("build the project's commands for the guest: %w\n"+
			"Fix the build, or run vmrun with -cmds=false to boot without them", err)
	}
	keep := map[string]bool{}
	for _, p := range pkgs {
		keep[path.Base(p)] = true
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		if !keep[e.Name()] {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return "", err
			}
		}
	}
	return dir, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
