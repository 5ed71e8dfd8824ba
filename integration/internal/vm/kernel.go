package vm

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// Kernel is an unpacked Debian kernel package.
type Kernel struct {
	Label   string  // -kernel label, e.g. "6.12"
	Package Package // the package it came from
	Dir     string  // the unpacked package
	Release string  // uname -r, e.g. "6.1.0-56-amd64"
	Boot    string  // the file qemu boots: vmlinux (PVH entry) or vmlinuz
}

// UnpackKernel unpacks the kernel .deb into dir once and, with pvh (amd64),
// cuts the uncompressed vmlinux out of the bzImage, so that qemu can boot
// it through its PVH entry point and skip the decompressor (about 3 s under
// TCG). Without pvh (arm64) qemu boots the package's vmlinuz.
func UnpackKernel(ctx context.Context, deb, dir, label string, pkg Package, pvh bool) (*Kernel, error) {
	done := filepath.Join(dir, ".complete")
	if _, err := os.Stat(done); err != nil {
		tmp := dir + ".tmp"
		if err := os.RemoveAll(tmp); err != nil {
			return nil, err
		}
		if err := unpackDeb(ctx, deb, tmp); err != nil {
			return nil, err
		}
		release, err := kernelRelease(tmp)
		if err != nil {
			return nil, err
		}
		vmlinuz := filepath.Join(tmp, "boot", "vmlinuz-"+release)
		if !pvh {
			// nothing to extract
		} else if err := extractVmlinux(ctx, vmlinuz, filepath.Join(tmp, "vmlinux")); err != nil {
			// Not fatal: the bzImage boots too, only slower.
			if err := os.WriteFile(filepath.Join(tmp, "vmlinux.error"), []byte(err.Error()+"\n"), 0o644); err != nil {
				return nil, err
			}
		}
		if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
			return nil, err
		}
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, dir); err != nil {
			return nil, err
		}
	}
	release, err := kernelRelease(dir)
	if err != nil {
		return nil, err
	}
	k := &Kernel{Label: label, Package: pkg, Dir: dir, Release: release}
	k.Boot = filepath.Join(dir, "vmlinux")
	if _, err := os.Stat(k.Boot); err != nil {
		k.Boot = filepath.Join(dir, "boot", "vmlinuz-"+release)
	}
	return k, nil
}

func unpackDeb(ctx context.Context, deb, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("dpkg-deb -x %s: %v: %s", deb, err, out)
	}
	return nil
}

func kernelRelease(dir string) (string, error) {
	ents, err := os.ReadDir(filepath.Join(dir, "lib", "modules"))
	if err != nil {
		return "", fmt.Errorf("unpacked kernel package has no lib/modules: %w", err)
	}
	for _, e := range ents {
		if e.IsDir() {
			return e.Name(), nil
		}
	}
	return "", fmt.Errorf("no kernel release directory in %s/lib/modules", dir)
}

// extractVmlinux reads the compressed payload's place from the bzImage
// header (boot protocol 2.08+: payload_offset and payload_length), unpacks
// it and keeps it if it is an ELF file with a PVH entry note.
func extractVmlinux(ctx context.Context, vmlinuz, dst string) error {
	b, err := os.ReadFile(vmlinuz)
	if err != nil {
		return err
	}
	if len(b) < 0x250 || string(b[0x202:0x206]) != "HdrS" || binary.LittleEndian.Uint16(b[0x206:]) < 0x208 {
		return errors.New("not a bzImage with boot protocol 2.08 or later")
	}
	setupSects := int(b[0x1f1])
	if setupSects == 0 {
		setupSects = 4
	}
	start := (setupSects+1)*512 + int(binary.LittleEndian.Uint32(b[0x248:]))
	end := start + int(binary.LittleEndian.Uint32(b[0x24c:]))
	if start >= end || end > len(b) {
		return errors.New("bzImage payload out of range")
	}
	payload := b[start:end]
	var r io.Reader
	switch {
	case bytes.HasPrefix(payload, []byte("\xfd7zXZ\x00")), bytes.HasPrefix(payload, []byte("\x28\xb5\x2f\xfd")):
		tool := "xz"
		if payload[0] == 0x28 {
			tool = "zstd"
		}
		// The kernel's build appends the uncompressed size (4 bytes).
		cmd := exec.CommandContext(ctx, tool, "-dc")
		cmd.Stdin = bytes.NewReader(payload[:len(payload)-4])
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s -dc: %v: %s", tool, err, stderr.String())
		}
		r = &out
	case bytes.HasPrefix(payload, []byte("\x1f\x8b")):
		zr, err := gzip.NewReader(bytes.NewReader(payload))
		if err != nil {
			return err
		}
		r = zr
	default:
		return fmt.Errorf("unknown bzImage payload compression (magic % x)", payload[:4])
	}
	img, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if !hasPVHNote(img) {
		return errors.New("vmlinux has no PVH entry note")
	}
	return writeFileAtomic(dst, img, 0o644)
}

// hasPVHNote reports whether an ELF image has the Xen note
// XEN_ELFNOTE_PHYS32_ENTRY (18), the entry qemu uses to boot vmlinux.
func hasPVHNote(img []byte) bool {
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return false
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		data, err := io.ReadAll(p.Open())
		if err != nil {
			continue
		}
		for len(data) >= 12 {
			namesz := int(f.ByteOrder.Uint32(data[0:]))
			descsz := int(f.ByteOrder.Uint32(data[4:]))
			typ := f.ByteOrder.Uint32(data[8:])
			off := 12 + (namesz+3)&^3
			next := off + (descsz+3)&^3
			if next > len(data) || 12+namesz > len(data) {
				break
			}
			if typ == 18 && strings.TrimRight(string(data[12:12+namesz]), "\x00") == "Xen" {
				return true
			}
			data = data[next:]
		}
	}
	return false
}

// Module is a kernel module ready to go into the image.
type Module struct {
	Name string // e.g. "rdma_rxe"
	Rel  string // path under /lib/modules/RELEASE, always uncompressed ".ko"
	Deps []string
	Data []byte
}

// Modules returns want and their dependencies (read from each module's
// .modinfo "depends=" field), dependencies first. Modules built into the
// kernel are left out; a wanted module that is neither there nor built in
// is an error unless it is in optional.
func (k *Kernel) Modules(ctx context.Context, want []string, optional map[string]bool) ([]Module, error) {
	mdir := filepath.Join(k.Dir, "lib", "modules", k.Release)
	index, err := readModuleList(filepath.Join(mdir, "modules.order"))
	if err != nil {
		return nil, err
	}
	builtin, err := readModuleList(filepath.Join(mdir, "modules.builtin"))
	if err != nil {
		return nil, err
	}
	var (
		order []Module
		state = map[string]int{} // 1 visiting, 2 done
	)
	var visit func(name string, opt bool) error
	visit = func(name string, opt bool) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("module dependency cycle at %s", name)
		case 2:
			return nil
		}
		state[name] = 1
		defer func() { state[name] = 2 }()
		if _, ok := builtin[name]; ok {
			return nil
		}
		rel, ok := index[name]
		if !ok {
			if opt {
				return nil
			}
			return fmt.Errorf("kernel %s has no module %s", k.Release, name)
		}
		data, err := readModule(ctx, filepath.Join(mdir, rel))
		if err != nil {
			return err
		}
		deps, err := moduleDepends(data)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		for _, d := range deps {
			if err := visit(d, false); err != nil {
				return err
			}
		}
		order = append(order, Module{Name: name, Rel: rel, Deps: deps, Data: data})
		return nil
	}
	for _, m := range want {
		if err := visit(modName(m), optional[m]); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// modName normalizes a module name the way the kernel does ('-' is '_').
func modName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// readModuleList reads modules.order or modules.builtin into a map from
// module name to its path, with any compression suffix dropped.
func readModuleList(file string) (map[string]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rel := strings.TrimSpace(sc.Text())
		for _, ext := range []string{".xz", ".zst", ".gz"} {
			rel = strings.TrimSuffix(rel, ext)
		}
		if rel == "" {
			continue
		}
		m[modName(strings.TrimSuffix(path.Base(rel), ".ko"))] = rel
	}
	return m, sc.Err()
}

// readModule reads a .ko, decompressing .ko.xz/.ko.zst/.ko.gz (busybox
// and finit_module without the kernel's decompressor want plain ELF).
func readModule(ctx context.Context, ko string) ([]byte, error) {
	if b, err := os.ReadFile(ko); err == nil {
		return b, nil
	}
	for ext, tool := range map[string]string{".xz": "xz", ".zst": "zstd", ".gz": "gzip"} {
		if _, err := os.Stat(ko + ext); err != nil {
			continue
		}
		out, err := exec.CommandContext(ctx, tool, "-dc", ko+ext).Output()
		if err != nil {
			return nil, fmt.Errorf("%s -dc %s: %w (install %s)", tool, ko+ext, err, tool)
		}
		return out, nil
	}
	return nil, fmt.Errorf("module file %s is missing", ko)
}

// moduleDepends reads the "depends=" entry of a module's .modinfo section.
func moduleDepends(ko []byte) ([]string, error) {
	f, err := elf.NewFile(bytes.NewReader(ko))
	if err != nil {
		return nil, err
	}
	s := f.Section(".modinfo")
	if s == nil {
		return nil, errors.New("no .modinfo section")
	}
	data, err := s.Data()
	if err != nil {
		return nil, err
	}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			var deps []string
			for _, d := range strings.Split(string(v), ",") {
				if d != "" {
					deps = append(deps, modName(d))
				}
			}
			return deps, nil
		}
	}
	return nil, nil
}

func writeFileAtomic(name string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
