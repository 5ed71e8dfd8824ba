//go:build integration

package uverbs

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/purerdma/rdma/integration/vmtest"
)

// mockMmaps returns mock0's record of mmap calls.
func mockMmaps(t *testing.T) []string {
	var m []string
	for _, l := range vmtest.MockRequests(t) {
		if strings.HasPrefix(l, "mmap ") {
			m = append(m, l)
		}
	}
	return m
}

// With static bfregs (mock0 loaded with dyn_uar=0, like an mlx5 kernel
// without MLX5_LIB_CAP_DYN_UAR) the library maps the static UAR pages as
// libmlx5 does: the device records the same mmap calls from ibv_devinfo
// and from Open, and CQs and QPs work on them.
func TestVMMlx5StaticUARsOnMock(t *testing.T) {
	vmtest.RequireMock(t)
	vmtest.ReloadMock(t, "dyn_uar=0")

	vmtest.ClearMockRequests(t)
	if out, err := exec.Command("ibv_devinfo", "-d", vmtest.MockDev).CombinedOutput(); err != nil {
		t.Fatalf("ibv_devinfo: %v\n%s", err, out)
	}
	cMaps := mockMmaps(t)

	vmtest.ClearMockRequests(t)
	c, err := Open(vmtest.MockDev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	goMaps := mockMmaps(t)
	p := c.prov.(*mlx5Provider)
	if p.dynUAR || len(p.staticUARs) == 0 {
		t.Fatalf("dynamic UAR %v, %d static pages mapped", p.dynUAR, len(p.staticUARs))
	}
	// libmlx5 also tries the core clock page (EINVAL, tolerated); the
	// UAR pages it maps are the ones to compare.
	var cUAR []string
	for _, l := range cMaps {
		if strings.HasPrefix(l, "mmap command=0 ") {
			cUAR = append(cUAR, l)
		}
	}
	if strings.Join(cUAR, "\n") != strings.Join(goMaps, "\n") {
		t.Errorf("mmap calls differ:\nlibmlx5:\n%s\nGo:\n%s", strings.Join(cMaps, "\n"), strings.Join(goMaps, "\n"))
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(CQAttr{CQE: 16})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pd.CreateQP(QPInitAttr{Type: QPTypeRawPacket, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxRecvWR: 16, MaxRecvSGE: 1}}); err != nil {
		t.Fatal(err)
	}
	for _, l := range vmtest.MockRequests(t) {
		if strings.HasPrefix(l, "create_") && !strings.HasSuffix(l, "-> 0") || strings.Contains(l, "uar=dynamic") {
			t.Errorf("with static bfregs: %s", l)
		}
	}
	t.Logf("Linux %s, %d static UAR pages mapped, as libmlx5:\n%s", vmtest.Kernel(), len(p.staticUARs), strings.Join(goMaps, "\n"))
}
