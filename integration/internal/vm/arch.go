package vm

import (
	"fmt"
	"path"
	"strings"
)

// Arch is a guest architecture: what differs between an amd64 and an
// arm64 guest. Everything else (the packages' names and versions, the
// modules, the init, the job protocol) is the same code for both.
type Arch struct {
	// Name is both the GOARCH of the programs built for the guest and
	// Debian's architecture of its packages: "amd64" or "arm64".
	Name string
	// Qemu is the system emulator, QemuPackage the Debian package that
	// ships it (EnsureQemu installs it).
	Qemu, QemuPackage string
	// Machine is qemu's -machine; Console the guest's serial console
	// device (the kernel's console= and the shell's terminal).
	Machine, Console string
	// CPU is qemu's -cpu when it emulates (KVM takes the host's).
	CPU string
	// TCG is qemu's -accel when it emulates: arm64 on an amd64 host
	// always is, with one host thread per vCPU (thread=multi, qemu's
	// default there too, written out).
	TCG string
	// Append is the kernel command line after console=.
	Append string
	// Triplet is the multiarch directory of the libraries
	// (lib/TRIPLET, usr/lib/TRIPLET).
	Triplet string
	// Interp is the ELF interpreter's canonical path and the file in the
	// multiarch directory it links to.
	Interp, InterpTarget string
	// PVH: the kernel package's bzImage holds a vmlinux with a PVH entry
	// note, which qemu boots without the decompressor (amd64). Without
	// it qemu boots the package's vmlinuz as it is (arm64's is a
	// gzip-compressed Image, which qemu's -kernel unpacks).
	PVH bool
	// Mock: the test-only module integration/mockrdma is built for this
	// architecture's kernels (amd64 only: it would need the arm64
	// headers and a cross compiler, and the tests that use mock0 model
	// an mlx5 device, whose provider is the same C code on both).
	Mock bool
	// Extras: the packages tests run from the share (Prometheus) are
	// unpacked for this architecture (amd64 only; their tests skip
	// elsewhere).
	Extras bool

	kernels map[string]Package
	headers map[string][]Package
}

// Arches are the guest architectures vmrun knows; amd64 is the default.
var Arches = map[string]*Arch{
	"amd64": {
		Name: "amd64", Qemu: "qemu-system-x86_64", QemuPackage: "qemu-system-x86",
		Machine: "pc", Console: "ttyS0", CPU: "max", TCG: "tcg",
		// tsc=reliable: see Boot.run.
		Append:  "panic=-1 quiet loglevel=4 cryptomgr.notests mitigations=off tsc=reliable",
		Triplet: "x86_64-linux-gnu",
		Interp:  "lib64/ld-linux-x86-64.so.2", InterpTarget: "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
		PVH: true, Mock: true, Extras: true,
		kernels: kernels, headers: kernelHeaders,
	},
	"arm64": {
		Name: "arm64", Qemu: "qemu-system-aarch64", QemuPackage: "qemu-system-arm",
		// virt: the generic board with a PL011 UART (ttyAMA0), GICv3
		// with -cpu max, and a PCIe host bridge for the virtio-pci
		// devices (virtio-serial, virtio-9p), as on amd64.
		// pauth-impdef=on: the pointer authentication codes that
		// Debian's arm64 kernel and userland compute in nearly every
		// function's prologue and epilogue use qemu's cheap
		// implementation-defined algorithm instead of emulating
		// QARMA5 (qemu's docs/system/arm/cpu-features.rst), the same
		// instructions and faults, several times faster under TCG.
		Machine: "virt", Console: "ttyAMA0", CPU: "max,pauth-impdef=on", TCG: "tcg,thread=multi",
		Append:  "panic=-1 quiet loglevel=4 cryptomgr.notests mitigations=off",
		Triplet: "aarch64-linux-gnu",
		Interp:  "lib/ld-linux-aarch64.so.1", InterpTarget: "/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1",
		kernels: kernelsArm64,
	},
}

// DefaultArch is the -arch used when none is given.
const DefaultArch = "amd64"

// ArchNames lists the architectures vmrun knows.
func ArchNames() []string { return []string{"amd64", "arm64"} }

// GetArch returns the architecture called name.
func GetArch(name string) (*Arch, error) {
	if name == "" {
		name = DefaultArch
	}
	a, ok := Arches[name]
	if !ok {
		return nil, fmt.Errorf("unknown architecture %q; use one of %s", name, strings.Join(ArchNames(), ", "))
	}
	return a, nil
}

// Kernel returns the kernel package for a -kernel label.
func (a *Arch) Kernel(label string) (Package, error) {
	p, ok := a.kernels[label]
	if !ok {
		return Package{}, fmt.Errorf("unknown kernel %q for %s; use one of %s", label, a.Name, strings.Join(KernelLabels(), ", "))
	}
	return p, nil
}

// aptName is how apt-get download names p for this architecture: the
// plain name for amd64 (the host's own architecture), NAME:arm64 for
// arm64 (dpkg --add-architecture arm64 makes apt see those).
func (a *Arch) aptName(p Package) string {
	return a.aptPackage(p.Name) + "=" + p.Version
}

// aptPackage is how apt names package name for this architecture,
// without a version (apt-cache madison's argument).
func (a *Arch) aptPackage(name string) string {
	if a.Name == DefaultArch {
		return name
	}
	return name + ":" + a.Name
}

// cacheName names a per-architecture directory or file under the cache:
// name itself for amd64 (the paths the cache had before arm64), name-ARCH
// otherwise.
func (a *Arch) cacheName(name string) string {
	if a.Name == DefaultArch {
		return name
	}
	return name + "-" + a.Name
}

// lib returns rel with the multiarch directory put in for {triplet}.
func (a *Arch) lib(rel string) string { return strings.ReplaceAll(rel, "{triplet}", a.Triplet) }

// libDirs are searched, in order, for DT_NEEDED libraries.
func (a *Arch) libDirs() []string {
	return []string{path.Join("lib", a.Triplet), path.Join("usr/lib", a.Triplet), "lib", "usr/lib"}
}

// tools returns guestTools with the multiarch directory filled in.
func (a *Arch) tools() []string {
	out := make([]string, len(guestTools))
	for i, t := range guestTools {
		out[i] = a.lib(t)
	}
	return out
}

// GoEnv is the environment of the builds for the guest: static
// linux/ARCH.
func (a *Arch) GoEnv(env []string) []string {
	return append(env, "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+a.Name)
}
