package sysfs_test

import (
	"errors"
	"io/fs"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
	"github.com/purerdma/rdma/sysfs"
)

// openCounter is an fs.FS that counts what is opened through it, files
// and directories alike (fs.ReadDir opens); its Stat (which the reads
// through an fs.FS make before opening, sys.OpenFS) is not counted.
type openCounter struct {
	fsys fs.FS
	mu   sync.Mutex
	n    map[string]int
}

func (o *openCounter) Open(name string) (fs.File, error) {
	o.mu.Lock()
	o.n[name]++
	o.mu.Unlock()
	return o.fsys.Open(name)
}

func (o *openCounter) Stat(name string) (fs.FileInfo, error) { return fs.Stat(o.fsys, name) }

func (o *openCounter) reset() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.n
	o.n = map[string]int{}
	return n
}

func countingSynthetic(t *testing.T, n int) (*sysfs.FS, *openCounter) {
	t.Helper()
	root := t.TempDir()
	if err := sysfstest.Synthetic(root, n, 2); err != nil {
		t.Fatal(err)
	}
	oc := &openCounter{fsys: os.DirFS(root), n: map[string]int{}}
	return sysfs.NewFS(oc), oc
}

// ReadCAs with no parts opens what libibumad's umad_get_ca opens, once
// each, and nothing else: per device node_type, node_guid,
// sys_image_guid, fw_ver, hca_type, hw_rev and ports/; per port its nine
// attributes, pkeys/ and each P_Key (gids/0, which umad_get_port reads
// too, is read on demand by Port.GIDValue).
func TestReadCAsLeanOpens(t *testing.T) {
	f, oc := countingSynthetic(t, 3)
	names := []string{"mlx5_0", "mlx5_1", "mlx5_2"}
	cas, errs, err := f.ReadCAs(names, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range names {
		if errs[i] != nil || cas[i] == nil || cas[i].Name != names[i] {
			t.Fatalf("%s: %+v, %v", names[i], cas[i], errs[i])
		}
	}
	opened := oc.reset()
	perDevice := map[string]int{}
	for name, c := range opened {
		if c != 1 {
			t.Errorf("%s opened %d times", name, c)
		}
		rest, ok := strings.CutPrefix(name, "class/infiniband/mlx5_1/")
		if ok {
			perDevice[rest]++
		}
		if !strings.HasPrefix(name, "class/infiniband/mlx5_") {
			t.Errorf("opened %s, outside the devices' directories", name)
		}
	}
	want := []string{"node_type", "node_guid", "sys_image_guid", "fw_ver", "hca_type", "hw_rev", "ports"}
	for _, p := range []string{"1", "2"} {
		for _, a := range []string{"state", "phys_state", "rate", "lid", "sm_lid", "lid_mask_count", "sm_sl",
			"cap_mask", "link_layer", "pkeys", "pkeys/0"} {
			want = append(want, "ports/"+p+"/"+a)
		}
	}
	var got []string
	for k := range perDevice {
		got = append(got, k)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("one device's opens:\n got %q\nwant %q", got, want)
	}
	if len(opened) != 3*29 {
		t.Errorf("%d opens for 3 devices of 2 ports, want 29 a device", len(opened))
	}
}

// The lean read gives the values of the full one, less the parts left
// out; each part fills just its fields.
func TestReadCAsPartsMatchFull(t *testing.T) {
	f, _ := countingSynthetic(t, 4)
	full, err := f.CAs()
	if err != nil || len(full) != 4 {
		t.Fatalf("CAs: %d, %v", len(full), err)
	}
	names := []string{"mlx5_3", "mlx5_0", "nosuch"}
	for _, parts := range []sysfs.Parts{0, sysfs.PartDescription, sysfs.PartCharDevs, sysfs.PartsAll} {
		cas, errs, err := f.ReadCAs(names, parts)
		if err != nil {
			t.Fatal(err)
		}
		if cas[2] != nil || !errors.Is(errs[2], fs.ErrNotExist) {
			t.Fatalf("parts %d: nosuch gave %v, %v", parts, cas[2], errs[2])
		}
		for i, idx := range []int{3, 0} {
			if errs[i] != nil {
				t.Fatalf("parts %d: %s: %v", parts, names[i], errs[i])
			}
			want := *full[idx]
			want.Ports = nil
			var wantPorts []sysfs.Port
			for _, p := range full[idx].Ports {
				wp := *p
				if parts&sysfs.PartCharDevs == 0 {
					wp.Umad, wp.ISSM = nil, nil
				}
				wantPorts = append(wantPorts, wp)
			}
			if parts&sysfs.PartDescription == 0 {
				want.BoardID, want.NodeDesc, want.Parent = nil, nil, nil
			}
			if parts&sysfs.PartCharDevs == 0 {
				want.Verbs = nil
			}
			got := *cas[i]
			gotPorts := got.Ports
			got.Ports = nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("parts %d: %s:\n got %+v\nwant %+v", parts, names[i], got, want)
			}
			if len(gotPorts) != len(wantPorts) {
				t.Fatalf("parts %d: %s: %d ports, want %d", parts, names[i], len(gotPorts), len(wantPorts))
			}
			for j := range gotPorts {
				if !reflect.DeepEqual(*gotPorts[j], wantPorts[j]) {
					t.Errorf("parts %d: %s port %d:\n got %+v\nwant %+v", parts, names[i], j+1, *gotPorts[j], wantPorts[j])
				}
			}
			if parts&sysfs.PartDescription != 0 && (got.BoardID == nil || got.NodeDesc == nil) {
				t.Errorf("parts %d: %s: no board_id or node_desc", parts, names[i])
			}
			if parts&sysfs.PartCharDevs != 0 && (got.Verbs == nil || gotPorts[0].Umad == nil) {
				t.Errorf("parts %d: %s: no character devices", parts, names[i])
			}
		}
	}
}
