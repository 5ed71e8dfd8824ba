package vm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// QemuBinary is the emulator vmrun runs for the default architecture.
var QemuBinary = Arches[DefaultArch].Qemu

// EnsureQemu returns the path of the architecture's system emulator
// (qemu-system-x86_64, qemu-system-aarch64) and installs Debian's package
// for it (qemu-system-x86, qemu-system-arm) first when it is missing.
func EnsureQemu(ctx context.Context, a *Arch, logf func(string, ...any)) (string, error) {
	if p, err := exec.LookPath(a.Qemu); err == nil {
		return p, nil
	}
	install := []string{"apt-get", "install", "-y", "--no-install-recommends", a.QemuPackage}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("%s is not installed; install it with: sudo %s", a.Qemu, strings.Join(install, " "))
	}
	logf("installing %s with apt-get (first run only)", a.QemuPackage)
	if _, err := aptGet(ctx, "", install...); err != nil {
		logf("apt-get install failed; running apt-get update and trying again")
		if _, err := aptGet(ctx, "", "apt-get", "update"); err != nil {
			return "", err
		}
		if _, err := aptGet(ctx, "", install...); err != nil {
			return "", err
		}
	}
	return exec.LookPath(a.Qemu)
}

// EnsureForeignArch makes apt see the architecture's packages: for a
// guest architecture other than the host's (dpkg --print-architecture),
// dpkg --add-architecture and apt-get update, once. Nothing is installed
// for that architecture; its packages are only downloaded and unpacked.
func EnsureForeignArch(ctx context.Context, a *Arch, logf func(string, ...any)) error {
	native, err := exec.CommandContext(ctx, "dpkg", "--print-architecture").Output()
	if err != nil {
		return fmt.Errorf("dpkg --print-architecture: %v (vmrun needs Debian's dpkg and apt)", err)
	}
	if strings.TrimSpace(string(native)) == a.Name {
		return nil
	}
	foreign, err := exec.CommandContext(ctx, "dpkg", "--print-foreign-architectures").Output()
	if err != nil {
		return fmt.Errorf("dpkg --print-foreign-architectures: %v", err)
	}
	for _, f := range strings.Fields(string(foreign)) {
		if f == a.Name {
			return nil
		}
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("apt does not know %s packages yet; run: sudo dpkg --add-architecture %s && sudo apt-get update", a.Name, a.Name)
	}
	logf("adding the %s architecture to dpkg and running apt-get update (first run only)", a.Name)
	if _, err := aptGet(ctx, "", "dpkg", "--add-architecture", a.Name); err != nil {
		return err
	}
	_, err = aptGet(ctx, "", "apt-get", "update")
	return err
}

// debFile returns the path of the cached .deb for p, or "" if it is not
// there. apt-get download names files NAME_VERSION_ARCH.deb with the
// version's ':' written as %3a.
func debFile(dir string, p Package) string {
	pattern := filepath.Join(dir, p.Name+"_"+strings.ReplaceAll(p.Version, ":", "%3a")+"_*.deb")
	m, _ := filepath.Glob(pattern)
	if len(m) == 0 {
		return ""
	}
	return m[0]
}

// Download makes sure every package of architecture a is in dir, fetching
// the missing ones with apt-get download, and returns their paths in the
// order given. Each architecture has a directory of its own.
func Download(ctx context.Context, dir string, a *Arch, pkgs []Package, logf func(string, ...any)) ([]string, error) {
	var missing []Package
	for _, p := range pkgs {
		if debFile(dir, p) == "" {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		names := make([]string, len(missing))
		for i, p := range missing {
			names[i] = a.aptName(p)
		}
		logf("downloading %d Debian packages with apt-get download (cached in %s)", len(missing), dir)
		if err := aptDownload(ctx, dir, names); err != nil {
			// A pin may be gone, its revision replaced (downloadRevised):
			// first with apt's lists as they are, which is all a later
			// run needs once the replacement is in dir, then with fresh
			// ones.
			revised, rerr := downloadRevised(ctx, dir, a, pkgs, logf)
			if rerr != nil {
				logf("apt-get download failed; running apt-get update and trying again")
				if _, uerr := aptGet(ctx, "", "apt-get", "update"); uerr != nil {
					return nil, fmt.Errorf("%v; apt-get update also failed: %v", err, uerr)
				}
				if revised, rerr = downloadRevised(ctx, dir, a, pkgs, logf); rerr != nil {
					return nil, fmt.Errorf("%v\nIf a pinned version is gone from the archive, update the pins in "+
						"integration/internal/vm/packages.go (see apt-cache policy NAME)", rerr)
				}
			}
			pkgs = revised
		}
	}
	paths := make([]string, len(pkgs))
	for i, p := range pkgs {
		paths[i] = debFile(dir, p)
		if paths[i] == "" {
			return nil, fmt.Errorf("apt-get download did not leave %s in %s", p, dir)
		}
	}
	return paths, nil
}

// downloadRevised is Download's second try, for when a pin is gone from
// the archive: Debian's security archive keeps one version of each package,
// and a new Debian revision of the same upstream release (6.1.192-2 to
// 6.1.192-3, a rebuild or a packaging fix) replaces the old one, one
// package at a time. Each pinned package the archive no longer offers is
// taken at the archive's newest version of the same upstream release,
// with a line in the log; a package whose upstream release is gone too
// is an error, and its pin needs bumping by hand. The pins still offered
// are downloaded as they are. It returns pkgs with the versions now in
// dir.
func downloadRevised(ctx context.Context, dir string, a *Arch, pkgs []Package, logf func(string, ...any)) ([]Package, error) {
	out := slices.Clone(pkgs)
	var names []string
	for i, p := range out {
		if debFile(dir, p) != "" {
			continue
		}
		avail, err := aptGet(ctx, "", "apt-cache", "madison", a.aptPackage(p.Name))
		if err != nil {
			return nil, err
		}
		v, ok := sameUpstream(p.Version, madisonVersions(string(avail)))
		if !ok {
			return nil, fmt.Errorf("%s: the archive has no version of upstream release %s (apt-cache madison %s)", p, upstream(p.Version), p.Name)
		}
		if v != p.Version {
			logf("%s is gone from the archive; taking %s, the same upstream release", p, v)
			out[i].Version = v
		}
		if debFile(dir, out[i]) == "" {
			names = append(names, a.aptName(out[i]))
		}
	}
	if len(names) > 0 {
		if err := aptDownload(ctx, dir, names); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// madisonVersions returns the versions apt-cache madison lists, one a
// line as "NAME | VERSION | SOURCE", in its order (newest first).
func madisonVersions(out string) []string {
	var vs []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "|")
		if len(f) >= 3 {
			vs = append(vs, strings.TrimSpace(f[1]))
		}
	}
	return vs
}

// sameUpstream picks, from versions listed newest first, the pinned
// version itself if it is there, else the first of the same upstream
// release (epoch and upstream version equal, Debian revision not).
func sameUpstream(pinned string, versions []string) (string, bool) {
	if slices.Contains(versions, pinned) {
		return pinned, true
	}
	for _, v := range versions {
		if upstream(v) == upstream(pinned) {
			return v, true
		}
	}
	return "", false
}

// upstream is a Debian version without its revision: "1:2.66-4+deb12u3"
// is "1:2.66", "6.1.192-2" is "6.1.192" (Debian policy 5.6.12: the
// revision follows the last hyphen).
func upstream(v string) string {
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		return v[:i]
	}
	return v
}

// aptDownload downloads into a temporary directory next to dir and moves
// the files in, so that an interrupted download leaves no partial .deb.
func aptDownload(ctx context.Context, dir string, names []string) error {
	tmp, err := os.MkdirTemp(dir, ".download-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	args := []string{"apt-get", "download"}
	if os.Geteuid() == 0 {
		// apt's _apt sandbox user cannot write here; skip the sandbox
		// instead of printing a warning for each file.
		args = append(args, "-o", "APT::Sandbox::User=root")
	}
	if _, err := aptGet(ctx, tmp, append(args, names...)...); err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.Rename(f, filepath.Join(dir, filepath.Base(f))); err != nil {
			return err
		}
	}
	return nil
}

func aptGet(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, tail(out.String(), 20))
	}
	return out.Bytes(), nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
