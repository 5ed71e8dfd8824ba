package vm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestKernelLabels(t *testing.T) {
	if got := strings.Join(KernelLabels(), " "); got != "6.1 6.12" {
		t.Errorf("KernelLabels() = %q, want %q", got, "6.1 6.12")
	}
	if _, err := KernelPackage("5.10"); err == nil {
		t.Error("KernelPackage(5.10) succeeded")
	}
}

func TestDebFile(t *testing.T) {
	dir := t.TempDir()
	name := "libcap2_1%3a2.66-4+deb12u3+b1_amd64.deb"
	if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := debFile(dir, Package{"libcap2", "1:2.66-4+deb12u3+b1"}); filepath.Base(got) != name {
		t.Errorf("debFile = %q, want %s", got, name)
	}
	if got := debFile(dir, Package{"libcap2", "1:2.66-4"}); got != "" {
		t.Errorf("debFile for another version = %q, want none", got)
	}
}

// TestCPIO checks the newc archive against the format: each header, name
// and body 4-byte aligned, parents before children, and the trailer.
func TestCPIO(t *testing.T) {
	r := newRootfs()
	r.file("etc/vmrun/modules", []byte("kernel/x.ko\n"), 0o644)
	r.symlink("bin/sh", "busybox")
	r.charDev("dev/console", 5, 1, 0o600)
	var buf bytes.Buffer
	if err := r.writeCPIO(&buf, nil); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	var names []string
	for off := 0; ; {
		if off%4 != 0 || len(b) < off+110 || string(b[off:off+6]) != "070701" {
			t.Fatalf("bad header at %d", off)
		}
		field := func(i int) int {
			v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			return int(v)
		}
		mode, size, rmaj, rmin, namesize := field(1), field(6), field(9), field(10), field(11)
		name := string(b[off+110 : off+110+namesize-1])
		names = append(names, name)
		body := (off + 110 + namesize + 3) &^ 3
		if name == "dev/console" && (mode&0o170000 != sIFCHR || rmaj != 5 || rmin != 1) {
			t.Errorf("dev/console: mode %o rdev %d:%d", mode, rmaj, rmin)
		}
		if name == "bin/sh" && string(b[body:body+size]) != "busybox" {
			t.Errorf("bin/sh links to %q", b[body:body+size])
		}
		off = (body + size + 3) &^ 3
		if name == "TRAILER!!!" {
			if off != len(b) {
				t.Errorf("%d bytes after the trailer", len(b)-off)
			}
			break
		}
	}
	want := "bin bin/sh dev dev/console etc etc/vmrun etc/vmrun/modules TRAILER!!!"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("entries = %q, want %q", got, want)
	}
}

func TestCPIOHostFile(t *testing.T) {
	src := filepath.Join(t.TempDir(), "init")
	if err := os.WriteFile(src, []byte("12345"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := newRootfs()
	r.hostFile("init", src, 0o755)
	var buf bytes.Buffer
	err := r.writeCPIO(&buf, func(name string) (io.ReadCloser, int64, error) {
		f, err := os.Open(name)
		return f, 5, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte("init\x00\x0012345")) {
		t.Errorf("archive lacks init's name and body:\n%q", buf.Bytes())
	}
}

func TestVersionLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{{"6.1", "6.12", true}, {"6.12", "6.1", false}, {"6.9", "6.12", true}, {"6.1", "6.1", false}} {
		if got := versionLess(c.a, c.b); got != c.less {
			t.Errorf("versionLess(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

// TestExplainKeepsTheFailure: the explained error (console and qemu output
// added) still says which failure it was, so Run can boot once more after
// a panic before the guest was ready, and only then.
func TestExplainKeepsTheFailure(t *testing.T) {
	b := &Boot{Prepared: &Prepared{Cache: t.TempDir(), Kernel: &Kernel{Label: "test"}}}
	console := &ring{max: 1 << 10}
	console.Write([]byte("[    1.2] Kernel panic - not syncing: Fatal exception in interrupt\n"))
	err := b.explain(fmt.Errorf("%w: %s", errBootPanic, "Kernel panic"), console, "")
	if !errors.Is(err, errBootPanic) || !strings.Contains(err.Error(), "Fatal exception") {
		t.Errorf("explained boot panic: %v (errors.Is %v)", err, errors.Is(err, errBootPanic))
	}
	if errors.Is(b.explain(errors.New("the guest kernel panicked: x"), console, ""), errBootPanic) {
		t.Error("a panic after the guest was ready reads as a boot panic")
	}
	if got := firstLine("a\nb"); got != "a" {
		t.Errorf("firstLine = %q", got)
	}
}

// TestArches checks what the architecture changes: amd64's names and
// paths are the ones the cache had before -arch, arm64's carry the
// architecture.
func TestArches(t *testing.T) {
	amd, err := GetArch("")
	if err != nil || amd.Name != "amd64" {
		t.Fatalf("GetArch(\"\") = %v, %v", amd, err)
	}
	arm, err := GetArch("arm64")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := GetArch("riscv64"); err == nil {
		t.Error("GetArch(riscv64) succeeded")
	}
	p := Package{"libcap2", "1:2.66-4+deb12u3+b1"}
	for _, c := range []struct{ got, want string }{
		{amd.aptName(p), "libcap2=1:2.66-4+deb12u3+b1"},
		{arm.aptName(p), "libcap2:arm64=1:2.66-4+deb12u3+b1"},
		{amd.cacheName("debs"), "debs"},
		{arm.cacheName("debs"), "debs-arm64"},
		{amd.tools()[len(amd.tools())-4], "usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so"},
		{arm.tools()[len(arm.tools())-4], "usr/lib/aarch64-linux-gnu/libibverbs/librxe-rdmav34.so"},
		{strings.Join(amd.libDirs(), " "), "lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu lib usr/lib"},
		{strings.Join(arm.libDirs(), " "), "lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu lib usr/lib"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	for _, a := range []*Arch{amd, arm} {
		for _, l := range KernelLabels() {
			k, err := a.Kernel(l)
			if err != nil || !strings.HasSuffix(k.Name, "-"+a.Name) {
				t.Errorf("%s kernel %s = %v, %v", a.Name, l, k, err)
			}
		}
	}
	if amd.Mock != true || arm.Mock != false || !amd.PVH || arm.PVH {
		t.Error("mock0 and the PVH boot are amd64's only")
	}
}

// TestSameUpstream checks the fallback for a pin whose Debian revision
// the archive replaced: the pin when listed, else the newest listed
// version of the same upstream release, never another release.
func TestSameUpstream(t *testing.T) {
	madison := ` linux-kbuild-6.1 | 6.1.192-3 | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
 linux-kbuild-6.1 | 6.1.176-1 | http://deb.debian.org/debian bookworm/main amd64 Packages
`
	vs := madisonVersions(madison)
	if want := []string{"6.1.192-3", "6.1.176-1"}; !slices.Equal(vs, want) {
		t.Fatalf("madisonVersions = %q, want %q", vs, want)
	}
	for _, c := range []struct {
		pinned, want string
		ok           bool
	}{
		{"6.1.192-2", "6.1.192-3", true},
		{"6.1.176-1", "6.1.176-1", true},
		{"6.1.190-1", "", false},
	} {
		got, ok := sameUpstream(c.pinned, vs)
		if got != c.want || ok != c.ok {
			t.Errorf("sameUpstream(%s) = %q, %v; want %q, %v", c.pinned, got, ok, c.want, c.ok)
		}
	}
	if got, want := upstream("1:2.66-4+deb12u3+b1"), "1:2.66"; got != want {
		t.Errorf("upstream = %q, want %q", got, want)
	}
}
