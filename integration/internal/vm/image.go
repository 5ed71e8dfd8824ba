package vm

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/purerdma/rdma/integration/internal/vmproto"
)

// imageFormat is part of the image stamp: bump it whenever the code below
// changes what goes into the image, so that cached images are rebuilt.
const imageFormat = "vmrun-image-5"

// wantModules are loaded by the guest's init, with their dependencies.
var (
	wantModules = []string{
		"crc32_generic", // rxe's ICRC through the crypto API (6.1)
		"virtio_pci", "virtio_console", "9pnet_virtio", "9p",
		"veth", "ib_core", "ib_uverbs", "ib_umad", "rdma_ucm", "rdma_rxe",
		"sch_netem", // tc qdisc netem: packet loss for the fault-injection tests
	}
	// optionalModules may be missing from a kernel.
	optionalModules = map[string]bool{"crc32_generic": true}
)

// guestTools are copied from the unpacked userland packages with the
// shared libraries they need (paths inside the packages; {triplet} is the
// architecture's multiarch directory, Arch.Triplet).
var guestTools = []string{
	"usr/bin/ibv_devices", "usr/bin/ibv_devinfo", "usr/bin/ibv_asyncwatch",
	"usr/bin/ibv_rc_pingpong", "usr/bin/ibv_uc_pingpong", "usr/bin/ibv_ud_pingpong",
	"usr/bin/ibv_srq_pingpong", "usr/bin/ibv_xsrq_pingpong",
	"usr/sbin/ibstat", "usr/sbin/ibstatus", "usr/sbin/perfquery", "usr/sbin/smpquery",
	"usr/sbin/smpdump", "usr/sbin/sminfo", "usr/sbin/ibaddr", "usr/sbin/ibportstate",
	"usr/bin/rdma", "bin/ip", "sbin/tc", "usr/bin/strace",
	// librdmacm's examples, the C peers of package rdmacm's tests
	"usr/bin/rping", "usr/bin/ucmatose", "usr/bin/udaddy", "usr/bin/mckey",
	// perftest 4.5, the C peers of the perftest tools
	"usr/bin/ib_send_bw", "usr/bin/ib_send_lat", "usr/bin/ib_write_bw", "usr/bin/ib_write_lat",
	"usr/bin/ib_read_bw", "usr/bin/ib_read_lat", "usr/bin/ib_atomic_bw", "usr/bin/ib_atomic_lat",
	// the rxe verbs provider, which libibverbs loads with dlopen
	"usr/lib/{triplet}/libibverbs/librxe-rdmav34.so",
	"etc/libibverbs.d/rxe.driver",
	// the mlx5 provider, for the test module mock0 (driver id mlx5)
	"usr/lib/{triplet}/libibverbs/libmlx5-rdmav34.so",
	"etc/libibverbs.d/mlx5.driver",
}

// guestLibs are there for C test peers built on the host against
// libibverbs-dev, libibumad-dev and librdmacm-dev, and for what glibc
// loads at run time.
var guestLibs = []string{"libibverbs.so.1", "libibumad.so.3", "libibmad.so.5", "librdmacm.so.1",
	"libgcc_s.so.1", // dlopened by glibc's pthread_exit and pthread_cancel (rping, ucmatose)
}

// ImageInputs is what the initramfs is built from.
type ImageInputs struct {
	Arch     *Arch // the guest's architecture; nil is amd64
	Kernel   *Kernel
	Userland string            // the userland packages unpacked into one tree
	Debs     []string          // the userland .deb files (their names go into the stamp)
	Programs map[string]string // guest path -> host file: the init and other static Go programs
	Files    map[string]string // guest path -> host file: other files (the test module)
}

// BuildImage writes the initramfs to dst unless dst.stamp says it was built
// from the same inputs. It reports whether it built a new image.
func BuildImage(ctx context.Context, in ImageInputs, dst string) (bool, error) {
	if in.Arch == nil {
		in.Arch = Arches[DefaultArch]
	}
	stamp, err := in.stamp()
	if err != nil {
		return false, err
	}
	if old, err := os.ReadFile(dst + ".stamp"); err == nil && string(old) == stamp {
		if _, err := os.Stat(dst); err == nil {
			return false, nil
		}
	}
	r, err := in.tree(ctx)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".initrd-")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	err = r.writeCPIO(tmp, func(name string) (io.ReadCloser, int64, error) {
		f, err := os.Open(name)
		if err != nil {
			return nil, 0, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, 0, err
		}
		return f, st.Size(), nil
	})
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("write initramfs: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return false, err
	}
	return true, os.WriteFile(dst+".stamp", []byte(stamp), 0o644)
}

// stamp hashes everything the image is made of.
func (in ImageInputs) stamp() (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, imageFormat, in.Kernel.Package, in.Kernel.Release, in.Kernel.Boot)
	for _, d := range in.Debs {
		fmt.Fprintln(h, filepath.Base(d))
	}
	fmt.Fprintln(h, wantModules, in.Arch.tools(), guestLibs)
	all := map[string]string{}
	for g, f := range in.Programs {
		all[g] = f
	}
	for g, f := range in.Files {
		all[g] = f
	}
	guests := make([]string, 0, len(all))
	for g := range all {
		guests = append(guests, g)
	}
	sort.Strings(guests)
	for _, g := range guests {
		fmt.Fprintln(h, g)
		b, err := os.ReadFile(all[g])
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (in ImageInputs) tree(ctx context.Context) (*rootfs, error) {
	r := newRootfs()
	for _, d := range []string{"dev", "proc", "sys", "run", "mnt", "usr/local/bin", "usr/local/sbin", "sbin", "usr/sbin", "home"} {
		r.mkdirAll(d, 0o755)
	}
	r.mkdirAll("tmp", 0o1777)
	r.mkdirAll("root", 0o700)
	r.charDev("dev/console", 5, 1, 0o600)
	r.charDev("dev/null", 1, 3, 0o666)
	if _, ok := in.Programs["/init"]; !ok {
		return nil, fmt.Errorf("no /init among the guest programs")
	}
	for g, host := range in.Programs {
		r.hostFile(g, host, 0o755)
	}
	for g, host := range in.Files {
		r.mkdirAll(path.Dir(strings.TrimPrefix(g, "/")), 0o755)
		r.hostFile(g, host, 0o644)
	}
	r.hostFile("bin/busybox", filepath.Join(in.Userland, "bin/busybox"), 0o755)
	r.symlink("bin/sh", "busybox")
	r.file("etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"), 0o644)
	r.file("etc/group", []byte("root:x:0:\ntty:x:5:\nnogroup:x:65534:\n"), 0o644)
	r.file("etc/hosts", []byte("127.0.0.1 localhost\n::1 localhost\n10.77.0.1 veth0\n10.77.0.2 veth1\n"), 0o644)
	r.file(strings.TrimPrefix(vmproto.ReleaseFile, "/"), []byte(in.Kernel.Release+"\n"), 0o644)

	// rdma-core, iproute2 and strace with their libraries
	u := &unpacked{root: in.Userland, r: r, done: map[string]bool{}, libDirs: in.Arch.libDirs()}
	for _, t := range in.Arch.tools() {
		if err := u.copy(t); err != nil {
			return nil, err
		}
	}
	for _, lib := range guestLibs {
		if err := u.lib(lib, "the guest image"); err != nil {
			return nil, err
		}
	}
	// The ELF interpreter's canonical path is a link into the multiarch dir.
	r.symlink(in.Arch.Interp, in.Arch.InterpTarget)
	r.symlink("sbin/ip", "/bin/ip")
	r.symlink("usr/sbin/tc", "/sbin/tc") // ahead of busybox's tc, which has no netem
	if st, err := os.Stat(filepath.Join(in.Userland, "etc/iproute2")); err == nil && st.IsDir() {
		if err := u.copyDir("etc/iproute2"); err != nil {
			return nil, err
		}
	}

	// kernel modules, dependencies first, plus a modules.dep for modprobe
	mods, err := in.Kernel.Modules(ctx, wantModules, optionalModules)
	if err != nil {
		return nil, err
	}
	mdir := path.Join("lib/modules", in.Kernel.Release)
	var list, dep strings.Builder
	rel := map[string]string{}
	for _, m := range mods {
		rel[m.Name] = m.Rel
		r.file(path.Join(mdir, m.Rel), m.Data, 0o644)
		fmt.Fprintln(&list, m.Rel)
	}
	for _, m := range mods {
		var deps []string
		seen := map[string]bool{}
		var walk func(names []string)
		walk = func(names []string) {
			for _, d := range names {
				if seen[d] || rel[d] == "" {
					continue
				}
				seen[d] = true
				deps = append(deps, rel[d])
				for _, mm := range mods {
					if mm.Name == d {
						walk(mm.Deps)
					}
				}
			}
		}
		walk(m.Deps)
		fmt.Fprintf(&dep, "%s:", m.Rel)
		for _, d := range deps {
			fmt.Fprintf(&dep, " %s", d)
		}
		fmt.Fprintln(&dep)
	}
	r.file(path.Join(mdir, "modules.dep"), []byte(dep.String()), 0o644)
	r.file(strings.TrimPrefix(vmproto.ModulesFile, "/"), []byte(list.String()), 0o644)
	for _, f := range []string{"modules.builtin", "modules.order"} {
		r.hostFile(path.Join(mdir, f), filepath.Join(in.Kernel.Dir, mdir, f), 0o644)
	}
	return r, nil
}

// unpacked copies files out of the unpacked packages, following symbolic
// links inside that tree, and pulls in the shared libraries ELF files need.
type unpacked struct {
	root    string
	r       *rootfs
	done    map[string]bool
	libDirs []string // searched, in order, for DT_NEEDED libraries
}

// resolve follows symbolic links of rel inside the unpacked tree.
func (u *unpacked) resolve(rel string) (string, error) {
	rel = clean(rel)
	for i := 0; i < 40; i++ {
		fi, err := os.Lstat(filepath.Join(u.root, rel))
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return rel, nil
		}
		t, err := os.Readlink(filepath.Join(u.root, rel))
		if err != nil {
			return "", err
		}
		if path.IsAbs(t) {
			rel = clean(t)
		} else {
			rel = clean(path.Join(path.Dir(rel), t))
		}
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", rel)
}

// copy puts rel into the image under the same path (with the contents of
// what it links to) and, for ELF files, the libraries it needs.
func (u *unpacked) copy(rel string) error {
	rel = clean(rel)
	if u.done[rel] {
		return nil
	}
	u.done[rel] = true
	real, err := u.resolve(rel)
	if err != nil {
		return fmt.Errorf("%s is not in the unpacked packages (%v); add its package to integration/internal/vm/packages.go", rel, err)
	}
	src := filepath.Join(u.root, real)
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	u.r.hostFile(rel, src, uint32(fi.Mode().Perm()))
	f, err := elf.Open(src)
	if err != nil {
		return nil // a script or a data file
	}
	defer f.Close()
	needed, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	for _, lib := range needed {
		if err := u.lib(lib, rel); err != nil {
			return err
		}
	}
	return nil
}

// lib finds a library by its soname in the multiarch directories.
func (u *unpacked) lib(soname, neededBy string) error {
	for _, d := range u.libDirs {
		p := path.Join(d, soname)
		if _, err := os.Lstat(filepath.Join(u.root, p)); err == nil {
			return u.copy(p)
		}
	}
	return fmt.Errorf("library %s (needed by %s) is in none of the downloaded packages; "+
		"add the package that ships it to integration/internal/vm/packages.go", soname, neededBy)
}

func (u *unpacked) copyDir(rel string) error {
	return filepath.WalkDir(filepath.Join(u.root, rel), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		r, err := filepath.Rel(u.root, p)
		if err != nil {
			return err
		}
		return u.copy(filepath.ToSlash(r))
	})
}
