package vm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// MockSource is the directory of the test-only kernel module, relative to
// the repository root.
const MockSource = "integration/mockrdma"

// mockFiles are the module's sources: they make its build stamp.
var mockFiles = []string{"mockrdma.c", "Kbuild"}

// buildTools are the host packages the module build needs: make, and the
// compiler Debian built both kernels with (gcc-12 provides
// x86_64-linux-gnu-gcc-12, which the 6.12 headers call by that name).
var buildTools = map[string]string{
	"make":                    "make",
	"x86_64-linux-gnu-gcc-12": "gcc-12",
}

// ensureBuildTools installs what the module build needs with apt-get.
func ensureBuildTools(ctx context.Context, logf func(string, ...any)) error {
	var missing []string
	for cmd, pkg := range buildTools {
		if _, err := exec.LookPath(cmd); err != nil {
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	install := append([]string{"apt-get", "install", "-y", "--no-install-recommends"}, missing...)
	if os.Geteuid() != 0 {
		return fmt.Errorf("building the test module needs %s; install with: sudo %s",
			strings.Join(missing, " "), strings.Join(install, " "))
	}
	logf("installing %s with apt-get (first run only)", strings.Join(missing, " "))
	if _, err := aptGet(ctx, "", install...); err != nil {
		if _, err := aptGet(ctx, "", "apt-get", "update"); err != nil {
			return err
		}
		if _, err := aptGet(ctx, "", install...); err != nil {
			return err
		}
	}
	return nil
}

// unpackHeaders unpacks the header packages of one kernel into dir, once,
// and points the arch Makefile (one line including the -common tree by
// its absolute /usr/src path) at the unpacked tree. It returns the
// directory to run make -C in.
func unpackHeaders(ctx context.Context, debs []string, dir string) (string, error) {
	find := func() (string, error) {
		m, _ := filepath.Glob(filepath.Join(dir, "usr/src/linux-headers-*-amd64"))
		if len(m) != 1 {
			return "", fmt.Errorf("%s: want one linux-headers-*-amd64 directory, found %d", dir, len(m))
		}
		return m[0], nil
	}
	fresh, err := unpackOnce(ctx, dir, debs)
	if err != nil {
		return "", err
	}
	if !fresh {
		return find()
	}
	kdir, err := find()
	if err != nil {
		return "", err
	}
	mk := filepath.Join(kdir, "Makefile")
	b, err := os.ReadFile(mk)
	if err != nil {
		return "", err
	}
	fixed := bytes.ReplaceAll(b, []byte("include /usr/src/"), []byte("include "+filepath.Join(dir, "usr/src")+"/"))
	if bytes.Equal(fixed, b) {
		return "", fmt.Errorf("%s: no 'include /usr/src/' line to point at the unpacked headers:\n%s", mk, b)
	}
	return kdir, os.WriteFile(mk, fixed, 0o644)
}

// buildMock builds the test-only module for one kernel from the headers
// in hdrDebs, into cache/mockrdma/LABEL/mockrdma.ko, unless the stamp next
// to it says it was built from the same sources and headers.
func buildMock(ctx context.Context, repo, cache, label string, hdrDebs []string, logf func(string, ...any)) (string, error) {
	src := filepath.Join(repo, MockSource)
	h := sha256.New()
	for _, d := range hdrDebs {
		fmt.Fprintln(h, filepath.Base(d))
	}
	for _, f := range mockFiles {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintln(h, f, len(b))
		h.Write(b)
	}
	stamp := hex.EncodeToString(h.Sum(nil))
	out := filepath.Join(cache, "mockrdma", label)
	ko := filepath.Join(out, "mockrdma.ko")
	if old, err := os.ReadFile(ko + ".stamp"); err == nil && string(old) == stamp && fileExists(ko) {
		return ko, nil
	}
	if err := ensureBuildTools(ctx, logf); err != nil {
		return "", err
	}
	kdir, err := unpackHeaders(ctx, hdrDebs, filepath.Join(cache, "headers", label))
	if err != nil {
		return "", err
	}
	build := filepath.Join(out, "build")
	if err := os.RemoveAll(build); err != nil {
		return "", err
	}
	if err := os.MkdirAll(build, 0o755); err != nil {
		return "", err
	}
	for _, f := range mockFiles {
		if err := copyFile(filepath.Join(src, f), filepath.Join(build, f)); err != nil {
			return "", err
		}
	}
	logf("building the test module %s for kernel %s", MockSource, label)
	// CONFIG_DEBUG_INFO_BTF_MODULES= skips BTF generation, which would
	// need pahole and the kernel's vmlinux (6.12's headers ship it).
	cmd := exec.CommandContext(ctx, "make", "-C", kdir, "M="+build, "CONFIG_DEBUG_INFO_BTF_MODULES=", "modules")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s for kernel %s: %v\n%s", MockSource, label, err, tail(string(b), 4000))
	}
	if err := copyFile(filepath.Join(build, "mockrdma.ko"), ko); err != nil {
		return "", err
	}
	return ko, os.WriteFile(ko+".stamp", []byte(stamp), 0o644)
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
