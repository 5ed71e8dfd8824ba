//go:build integration

package uverbs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/integration/vmtest"
)

// verbsbench is the C peer (integration/verbsbench), built on the host by
// integration/verbsbench/build.sh.
func verbsbench(t *testing.T) string {
	t.Helper()
	vmtest.RequireAmd64Peer(t, "verbsbench")
	p := filepath.Join(vmtest.Repo(), "integration", ".cache", "verbsbench", "verbsbench")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no C peer (%v): run sh integration/verbsbench/build.sh on the host first", err)
	}
	return p
}

// goldenCalls is what verbsbench's "calls" mode does, in Go.
func goldenCalls() error {
	c, err := Open(vmtest.Dev0, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.QueryPort(1); err != nil {
		return err
	}
	pd, err := c.AllocPD()
	if err != nil {
		return err
	}
	cq, err := c.CreateCQ(CQAttr{CQE: 16})
	if err != nil {
		return err
	}
	if err := cq.Close(); err != nil {
		return err
	}
	return pd.Close()
}

// The test binary re-run under rdmacapture makes the calls from init: the
// runtime keeps the main goroutine on the main thread during init, and
// rdmacapture traces that thread only.
func init() {
	if os.Getenv("UVERBS_GOLDEN_CHILD") != "1" {
		return
	}
	if err := goldenCalls(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// ioctlBlock is one RDMA_VERBS_IOCTL of an rdmacapture file: its hdr line
// and its attribute lines (with the "in" lines of pointed-to inputs).
type ioctlBlock struct {
	hdr   string
	attrs []string
}

var attrRE = regexp.MustCompile(`^  attr \d+ id=(0x[0-9a-f]+) len=(\d+) flags=(0x[0-9a-f]+) elem_id\|reserved=(0x[0-9a-f]+) data=(\S+)$`)

func parseCapture(b []byte) []ioctlBlock {
	var out []ioctlBlock
	var cur *ioctlBlock
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "ioctl "):
			out = append(out, ioctlBlock{})
			cur = &out[len(out)-1]
		case cur == nil:
		case strings.HasPrefix(line, "  hdr "):
			cur.hdr = line
		case strings.HasPrefix(line, "  attr "):
			cur.attrs = append(cur.attrs, line)
		case strings.HasPrefix(line, "    in "):
			cur.attrs = append(cur.attrs, line)
		}
	}
	return out
}

// find returns the first block whose header names object/method (and for
// INVOKE_WRITE, whose WRITE_CMD is cmd).
func find(bs []ioctlBlock, object, method uint16, cmd int) *ioctlBlock {
	want := fmt.Sprintf("object_id=0x%04x method_id=0x%04x ", object, method)
	for i := range bs {
		if !strings.Contains(bs[i].hdr, want) {
			continue
		}
		if cmd >= 0 && !strings.Contains(strings.Join(bs[i].attrs, "\n"), fmt.Sprintf("id=0x0002 len=8 flags=0x1 elem_id|reserved=0x0000 data=0x%016x", cmd)) {
			continue
		}
		return &bs[i]
	}
	return nil
}

// normalize masks what may differ between two correct programs: the
// values of attributes that carry an address or a user handle or a
// descriptor number (masked by attribute id).
func normalize(b *ioctlBlock, mask map[string]bool) []string {
	out := []string{b.hdr}
	for _, a := range b.attrs {
		if m := attrRE.FindStringSubmatch(a); m != nil && mask[m[1]] {
			a = strings.Replace(a, "data="+m[5], "data=<masked>", 1)
		}
		out = append(out, a)
	}
	return out
}

// What we send for query_port, alloc_pd and create_cq on rxe equals what
// rdma-core 44 sends, apart from handles and addresses (both captured with
// the test bed's rdmacapture).
func TestVMGoldenBytes(t *testing.T) {
	vmtest.Require(t)
	peer := verbsbench(t)
	ctx := context.Background()
	cCap, err := vmtest.Capture(ctx, peer, "calls", vmtest.Dev0)
	if err != nil {
		t.Fatal(err)
	}
	os.Setenv("UVERBS_GOLDEN_CHILD", "1")
	goCap, err := vmtest.Capture(ctx, os.Args[0])
	os.Unsetenv("UVERBS_GOLDEN_CHILD")
	if err != nil {
		t.Fatal(err)
	}
	cb, gb := parseCapture(cCap), parseCapture(goCap)
	for _, tc := range []struct {
		name           string
		object, method uint16
		cmd            int
		mask           map[string]bool
	}{
		{"query_port", abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT, -1, nil},
		// CORE_IN of ALLOC_PD is struct ib_uverbs_alloc_pd {u64 response}:
		// an address, inline.
		{"alloc_pd", abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_INVOKE_WRITE, abi.IB_USER_VERBS_CMD_ALLOC_PD, map[string]bool{"0x0000": true}},
		// USER_HANDLE (rdma-core: the struct's address; here a counter)
		// and EVENT_FD (a descriptor number).
		{"create_cq", abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_CREATE, -1, map[string]bool{"0x0002": true, "0x0007": true}},
	} {
		c, g := find(cb, tc.object, tc.method, tc.cmd), find(gb, tc.object, tc.method, tc.cmd)
		if c == nil || g == nil {
			t.Errorf("%s: not captured (rdma-core %v, purerdma %v)", tc.name, c != nil, g != nil)
			continue
		}
		cl, gl := normalize(c, tc.mask), normalize(g, tc.mask)
		if strings.Join(cl, "\n") != strings.Join(gl, "\n") {
			t.Errorf("%s differs:\nrdma-core:\n%s\npurerdma:\n%s", tc.name, strings.Join(cl, "\n"), strings.Join(gl, "\n"))
		} else {
			t.Logf("%s: identical apart from masked values:\n%s", tc.name, strings.Join(gl, "\n"))
		}
	}
}
