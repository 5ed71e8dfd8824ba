package vmtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Capture runs a program under the guest's rdmacapture and returns the
// capture: every ioctl, write and read it made on /dev/infiniband/*, with
// the exact bytes (see integration/internal/rdmacapture). The program's
// own output is discarded.
func Capture(ctx context.Context, args ...string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "capture-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "capture.txt")
	cmd := exec.CommandContext(ctx, "rdmacapture", append([]string{"-o", out, "--"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("rdmacapture %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return os.ReadFile(out)
}

// Requests keeps the lines of a capture that say what the program asked
// for (calls, ioctl headers, attributes, raw request bytes and input
// buffers) and drops comments and the kernel's answers ("out" lines and
// return values), which differ between kernels.
func Requests(capture []byte) []string {
	var keep []string
	for _, line := range strings.Split(string(capture), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "out ") {
			continue
		}
		if call, _, ok := strings.Cut(line, " = "); ok && !strings.HasPrefix(line, " ") {
			line = call
		}
		keep = append(keep, line)
	}
	return keep
}
