package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// stampName is the file in the cache directory that records which package
// and version were unpacked there. It is written last, so a cache directory
// without it is incomplete.
const stampName = "GENABI-SOURCE"

// fetchHeaders makes sure dir holds the unpacked pinned Debian package and
// returns the kernel source tree inside it
// (dir/usr/src/linux-headers-...-common). An existing cache is reused; one
// that holds another package or version is an error, never silently used.
func fetchHeaders(dir string) (string, error) {
	want := debPackage + " " + debVersion + "\n"
	tree := filepath.Join(dir, "usr", "src", debPackage)
	stamp, err := os.ReadFile(filepath.Join(dir, stampName))
	switch {
	case err == nil && string(stamp) == want:
		if _, err := os.Stat(filepath.Join(tree, "include", "uapi", "rdma")); err != nil {
			return "", fmt.Errorf("header cache %s is damaged (%v); delete it and run again", dir, err)
		}
		return tree, nil
	case err == nil:
		return "", fmt.Errorf("header cache %s holds %q, want %q; delete it and run again", dir, strings.TrimSpace(string(stamp)), strings.TrimSpace(want))
	case !os.IsNotExist(err):
		return "", err
	}
	if _, err := os.Stat(dir); err == nil {
		return "", fmt.Errorf("header cache %s exists but has no %s stamp (interrupted fetch?); delete it and run again", dir, stampName)
	}

	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".fetch-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)

	spec := debPackage + "=" + debVersion
	fmt.Fprintf(os.Stderr, "genabi: apt-get download %s\n", spec)
	if out, err := command(tmp, "apt-get", "download", spec); err != nil {
		fmt.Fprintf(os.Stderr, "genabi: download failed (%v), running apt-get update and retrying\n%s", err, out)
		if out, err := command(tmp, "apt-get", "update"); err != nil {
			return "", fmt.Errorf("cannot download Debian package %s version %s: apt-get update failed: %v\n%s", debPackage, debVersion, err, out)
		}
		if out, err := command(tmp, "apt-get", "download", spec); err != nil {
			return "", fmt.Errorf("cannot download Debian package %s version %s (apt-get download %s: %v)\n%s"+
				"The generator needs exactly this version and does not fall back to other headers; "+
				"make it available to apt (for example from snapshot.debian.org) or bump the pin in abi/internal/genabi/main.go",
				debPackage, debVersion, spec, err, out)
		}
	}
	debs, err := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if err != nil || len(debs) != 1 {
		return "", fmt.Errorf("apt-get download %s: expected one .deb in %s, found %d", spec, tmp, len(debs))
	}
	out, err := command(tmp, "dpkg-deb", "--show", "--showformat=${Package} ${Version}\n", debs[0])
	if err != nil {
		return "", fmt.Errorf("dpkg-deb --show %s: %v\n%s", debs[0], err, out)
	}
	if string(out) != want {
		return "", fmt.Errorf("downloaded %s is %q, want %q", debs[0], strings.TrimSpace(string(out)), strings.TrimSpace(want))
	}
	x := filepath.Join(tmp, "x")
	if out, err := command(tmp, "dpkg-deb", "-x", debs[0], x); err != nil {
		return "", fmt.Errorf("dpkg-deb -x %s: %v\n%s", debs[0], err, out)
	}
	if _, err := os.Stat(filepath.Join(x, "usr", "src", debPackage, "include", "uapi", "rdma")); err != nil {
		return "", fmt.Errorf("package %s %s has no include/uapi/rdma: %v", debPackage, debVersion, err)
	}
	if err := os.WriteFile(filepath.Join(x, stampName), []byte(want), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(x, dir); err != nil {
		return "", err
	}
	return tree, nil
}

// command runs name with args in dir and returns its combined output.
func command(dir, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	err := cmd.Run()
	return buf.Bytes(), err
}
