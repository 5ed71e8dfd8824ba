package mk

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The PATH of a clean machine: no Go in any of it (checked).
const cleanPath = "/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin"

// TestMakeBuildWithoutGo copies the working tree (tracked files and
// untracked ones git does not ignore) into a temporary directory and runs
// `make build` there with a PATH that holds no go command: the Makefile's
// mk/bin/go must install the toolchain (mk/go-bootstrap.sh: the module
// proxy's golang.org/toolchain zip, its h1: hash checked) under the copy's
// .cache/go and build with it. The zip is kept in the real tree's
// .cache/go/dl, so only the first run downloads it; every run checks and
// unpacks it again. A second `make build` must reuse the install.
func TestMakeBuildWithoutGo(t *testing.T) {
	if os.Getenv("PURERDMA_BOOTSTRAP_TEST") != "1" {
		t.Skip("runs make build with no Go on PATH and may download Go (70 MB, once): set PURERDMA_BOOTSTRAP_TEST=1 (make test-bootstrap)")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the bootstrap installs linux toolchains only")
	}
	for _, tool := range []string{"make", "git", "bash", "unzip", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (the bootstrap installs unzip with apt-get, but only as root on Debian)", tool)
		}
	}
	for _, dir := range filepath.SplitList(cleanPath) {
		if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
			t.Skipf("%s/go exists: this machine has no PATH without Go to try", dir)
		}
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(t.TempDir(), "purerdma")
	copyTree(t, repo, tree)

	env := []string{"PATH=" + cleanPath, "GO_BOOTSTRAP_DL=" + filepath.Join(repo, ".cache", "go", "dl")}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "PATH", name == "GOROOT", name == "GOTOOLCHAIN", name == "GO_BOOTSTRAP_VERSION", name == "GO_BOOTSTRAP_DL",
			name == "MAKEFLAGS", name == "MAKELEVEL", name == "MFLAGS":
			continue
		}
		env = append(env, kv)
	}
	makeBuild := func() string {
		t.Helper()
		cmd := exec.Command("make", "-s", "build")
		cmd.Dir, cmd.Env = tree, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make build with PATH=%s: %v\n%s", cleanPath, err, out)
		}
		return string(out)
	}
	out := makeBuild()
	if !strings.Contains(out, "go-bootstrap: installed go") {
		t.Errorf("make build did not install Go:\n%s", out)
	}
	t.Logf("first make build:\n%s", out)
	goBin, err := filepath.Glob(filepath.Join(tree, ".cache", "go", "go*", "bin", "go"))
	if err != nil || len(goBin) != 1 {
		t.Fatalf("installed toolchains: %v %v", goBin, err)
	}
	cmd := exec.Command(filepath.Join(tree, "mk", "bin", "go"), "version")
	cmd.Dir, cmd.Env = tree, env
	v, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(v), "go version go") || !strings.Contains(string(v), runtime.GOOS+"/") {
		t.Errorf("mk/bin/go version: %q %v", v, err)
	}
	want := "go version " + filepath.Base(filepath.Dir(filepath.Dir(goBin[0]))) + " "
	if !strings.HasPrefix(string(v), want) {
		t.Errorf("mk/bin/go runs %q, want the installed %q", v, want)
	}
	if out := makeBuild(); strings.Contains(out, "go-bootstrap:") {
		t.Errorf("the second make build installed Go again:\n%s", out)
	}
}

// copyTree copies the files of the working tree git knows about (tracked,
// and untracked but not ignored), keeping modes and symbolic links.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	out, err := exec.Command("git", "-C", from, "ls-files", "-z", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src, dst := filepath.Join(from, name), filepath.Join(to, name)
		fi, err := os.Lstat(src)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, dst); err != nil {
				t.Fatal(err)
			}
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
				t.Fatal(err)
			}
		}
	}
}
