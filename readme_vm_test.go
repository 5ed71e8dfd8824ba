//go:build integration

package rdma_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
)

// TestVMReadmeCmsend runs the README's connection manager example in the
// VM, server and client: the server prints the client's message. make
// integration builds the README's programs into integration/.cache/readme.
func TestVMReadmeCmsend(t *testing.T) {
	vmtest.Require(t)
	dir := "readme" // make integration-arm64-all builds arm64's into readme-arm64
	if runtime.GOARCH != "amd64" {
		dir += "-" + runtime.GOARCH
	}
	bin := filepath.Join(vmtest.Repo(), "integration", ".cache", dir, "cmsend")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("the README's program is not built (%v): make integration builds it", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr := vmtest.Addr0 + ":7901"
	var sout, serr bytes.Buffer
	srv := exec.CommandContext(ctx, bin, "-s", addr)
	srv.Stdout, srv.Stderr = &sout, &serr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// The client retries until the server listens (a refusal ends it).
	var out []byte
	var err error
	for i := 0; i < 50; i++ {
		time.Sleep(200 * time.Millisecond)
		if out, err = exec.CommandContext(ctx, bin, addr).CombinedOutput(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("server: %v\n%s", err, serr.String())
	}
	if want := "received \"hello over RDMA\"\n"; sout.String() != want {
		t.Errorf("server printed %q, want %q", sout.String(), want)
	}
}
