package vm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// QemuBinary is the emulator vmrun runs.
const QemuBinary = "qemu-system-x86_64"

// EnsureQemu returns the path of qemu-system-x86_64 and installs Debian's
// qemu-system-x86 package first when it is missing.
func EnsureQemu(ctx context.Context, logf func(string, ...any)) (string, error) {
	if p, err := exec.LookPath(QemuBinary); err == nil {
		return p, nil
	}
	install := []string{"apt-get", "install", "-y", "--no-install-recommends", "qemu-system-x86"}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("%s is not installed; install it with: sudo %s", QemuBinary, strings.Join(install, " "))
	}
	logf("installing qemu-system-x86 with apt-get (first run only)")
	if _, err := aptGet(ctx, "", install...); err != nil {
		logf("apt-get install failed; running apt-get update and trying again")
		if _, err := aptGet(ctx, "", "apt-get", "update"); err != nil {
			return "", err
		}
		if _, err := aptGet(ctx, "", install...); err != nil {
			return "", err
		}
	}
	return exec.LookPath(QemuBinary)
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

// Download makes sure every package is in dir, fetching the missing ones
// with apt-get download, and returns their paths in the order given.
func Download(ctx context.Context, dir string, pkgs []Package, logf func(string, ...any)) ([]string, error) {
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
			names[i] = p.String()
		}
		logf("downloading %d Debian packages with apt-get download (cached in %s)", len(missing), dir)
		if err := aptDownload(ctx, dir, names); err != nil {
			logf("apt-get download failed; running apt-get update and trying again")
			if _, uerr := aptGet(ctx, "", "apt-get", "update"); uerr != nil {
				return nil, fmt.Errorf("%v; apt-get update also failed: %v", err, uerr)
			}
			if err := aptDownload(ctx, dir, names); err != nil {
				return nil, fmt.Errorf("%v\nIf a pinned version is gone from the archive, update the pins in "+
					"integration/internal/vm/packages.go (see apt-cache policy NAME)", err)
			}
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
