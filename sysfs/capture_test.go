package sysfs

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/purerdma/rdma"
)

// extractCapture unpacks testdata/name/sysfs.tar.gz, written in the VM by
// capture.sh, into a temporary directory and returns it as a root.
func extractCapture(t testing.TB, name string) string {
	t.Helper()
	skipInVM(t)
	f, err := os.Open(filepath.Join("testdata", name, "sysfs.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rel := filepath.Clean(h.Name)
		if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Fatalf("capture entry %q leaves the tree", h.Name)
		}
		p := filepath.Join(dst, rel)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeSymlink:
			if filepath.IsAbs(h.Linkname) {
				t.Fatalf("capture symlink %q -> %q is absolute", h.Name, h.Linkname)
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(h.Linkname, p); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(io.LimitReader(tr, maxAttr+1))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("capture entry %q has type %c", h.Name, h.Typeflag)
		}
	}
	return dst
}

// TestVMCaptures reads the trees capture.sh recorded in the Soft-RoCE VM
// (testdata/rxe-*-vm, see their READMEs) on both kernels: the whole GID
// table (1024 slots, the empty ones without gid_attrs, which failed EINVAL),
// the counters after a 200-iteration ibv_rc_pingpong, and the one
// difference between the kernels: issm exists for RoCE ports on 6.1 only.
func TestVMCaptures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kernel string
		issm   bool
	}{
		{"rxe-6.1-vm", "6.1.0-56-amd64", true},
		{"rxe-6.12-vm", "6.12.117+deb12-amd64", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join("testdata", tc.name, "sysfs.tar.gz")); errors.Is(err, os.ErrNotExist) {
				t.Skipf("no capture in testdata/%s", tc.name)
			}
			root := extractCapture(t, tc.name)
			info, err := os.ReadFile(filepath.Join(root, "capture-info.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(info), "kernel: "+tc.kernel) {
				t.Errorf("capture-info.txt: %s", info)
			}
			f, err := New(root)
			if err != nil {
				t.Fatal(err)
			}
			cas, err := f.CAs()
			if err != nil {
				t.Fatal(err)
			}
			// The VM's veth MACs are fixed (integration/vmtest), hence
			// the GUIDs.
			want := []*CA{
				vmCA(0, 0x505400fffe123401, "veth0", tc.issm),
				vmCA(1, 0x505400fffe123402, "veth1", tc.issm),
			}
			if d := cmp.Diff(want, cas, ignoreFS); d != "" {
				t.Errorf("CAs (-want +got):\n%s", d)
			}
			for i, ca := range cas {
				p := ca.Ports[0]
				gids, err := p.GIDs()
				if err != nil {
					t.Fatal(err)
				}
				addr := [...]string{"::ffff:10.77.0.1", "::ffff:10.77.0.2"}[i]
				if len(gids) != 2 || gids[0].GID.Prefix() != 0xfe80000000000000 || gids[1].GID.Addr().String() != addr ||
					*gids[0].Type != rdma.GIDTypeRoCEv2 || *gids[1].NetDev != *ca.Parent {
					t.Errorf("%s GIDs %+v", ca.Name, gids)
				}
				ents, err := os.ReadDir(filepath.Join(root, "devices/virtual/infiniband", ca.Name, "ports/1/gids"))
				if err != nil || len(ents) != 1024 {
					t.Errorf("%s: %d GID slots, %v; want 1024", ca.Name, len(ents), err)
				}
				hw, err := p.HwCounters()
				if err != nil {
					t.Fatal(err)
				}
				if len(hw) != 15 || hw["sent_pkts"] < 200 || hw["rcvd_pkts"] < 200 || hw["rdma_sends"] != 200 || hw["rdma_recvs"] != 200 {
					t.Errorf("%s hw counters %v", ca.Name, hw)
				}
				if _, err := p.Counters(); !errors.Is(err, ErrNotSupported) {
					t.Errorf("%s Counters: %v, want ErrNotSupported", ca.Name, err)
				}
			}
		})
	}
}

func vmCA(n int, guid rdma.GUID, netdev string, issm bool) *CA {
	ca := rxeCA(n, guid, netdev)
	ca.NodeDesc = ptr("rxe")
	if !issm {
		ca.Ports[0].ISSM = nil
	}
	return ca
}
