package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// stage builds g.work/include, a userspace include tree like the one
// "make headers_install" produces, from the kernel tree's include/uapi
// (linux, asm-generic, rdma) and arch/<arch>/include/uapi/asm for the arch
// of the C compiler. Every header the C programs see comes from the pinned
// package; only libc's own headers (stdio.h, stddef.h) come from the host.
func (g *generator) stage() error {
	machine, err := command(g.work, g.cc, "-dumpmachine")
	if err != nil {
		return fmt.Errorf("%s -dumpmachine: %v\n%s", g.cc, err, machine)
	}
	var arch string
	switch m := strings.TrimSpace(string(machine)); {
	case strings.HasPrefix(m, "x86_64-"):
		arch = "x86"
	case strings.HasPrefix(m, "aarch64-"):
		arch = "arm64"
	default:
		return fmt.Errorf("the C compiler targets %s; only x86_64 and aarch64 hosts are supported (the ABI files are for 64-bit little-endian Linux)", m)
	}

	g.include = filepath.Join(g.work, "include")
	uapi := filepath.Join(g.srcTree, "include", "uapi")
	for _, d := range []string{"linux", "asm-generic", "rdma"} {
		if err := copyHeaders(filepath.Join(uapi, d), filepath.Join(g.include, d)); err != nil {
			return err
		}
	}
	asm := filepath.Join(g.include, "asm")
	if err := copyHeaders(filepath.Join(g.srcTree, "arch", arch, "include", "uapi", "asm"), asm); err != nil {
		return err
	}
	// Headers the arch does not provide come from asm-generic, as Kbuild's
	// mandatory-y does.
	kbuild, err := os.ReadFile(filepath.Join(uapi, "asm-generic", "Kbuild"))
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(kbuild), "\n") {
		name, ok := strings.CutPrefix(strings.TrimSpace(line), "mandatory-y += ")
		if !ok {
			continue
		}
		p := filepath.Join(asm, name)
		if _, err := os.Stat(p); err == nil {
			continue
		}
		if err := os.WriteFile(p, []byte("#include <asm-generic/"+name+">\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// The edits of scripts/headers_install.sh (Linux 6.12), which turn in-tree
// UAPI headers into userspace headers.
var sanitize = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`([[:space:](])(__user|__force|__iomem)[[:space:]]`), "$1"},
	{regexp.MustCompile(`__attribute_const__([[:space:]]|$)`), "$1"},
	{regexp.MustCompile(`(?m)^#include <linux/compiler(|_types)\.h>`), ""},
	{regexp.MustCompile(`(^|[^a-zA-Z0-9])__packed([^a-zA-Z0-9_]|$)`), "${1}__attribute__((packed))$2"},
	{regexp.MustCompile(`(^|[[:space:](])(inline|asm|volatile)([[:space:](]|$)`), "${1}__${2}__$3"},
}

func copyHeaders(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !strings.HasSuffix(path, ".h") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			for _, s := range sanitize {
				l = s.re.ReplaceAllString(l, s.repl)
			}
			lines[i] = l
		}
		return os.WriteFile(dst, []byte(strings.Join(lines, "\n")), 0o644)
	})
}
