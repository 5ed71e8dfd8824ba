//go:build integration

package uverbs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/purerdma/rdma"
	"github.com/purerdma/rdma/abi"
	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/internal/sys"
	"github.com/purerdma/rdma/internal/sys/systest"
)

// The VM tests run in the Soft-RoCE guest (integration/README.md): rxe0 and
// rxe1 on a veth pair, Linux 6.1 or 6.12.

func vmOpen(t *testing.T, name string) *Context {
	t.Helper()
	c, err := Open(name, nil)
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close(%s): %v", name, err)
		}
	})
	return c
}

func TestVMDevices(t *testing.T) {
	vmtest.Require(t)
	devs, err := Devices(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) < 2 || devs[0].Name != vmtest.Dev0 || devs[1].Name != vmtest.Dev1 {
		t.Fatalf("devices %+v", devs)
	}
	for i, want := range []string{vmtest.GUID0, vmtest.GUID1} {
		d := devs[i]
		g := fmt.Sprintf("%04x:%04x:%04x:%04x", d.NodeGUID>>48, d.NodeGUID>>32&0xffff, d.NodeGUID>>16&0xffff, d.NodeGUID&0xffff)
		if g != want || d.DriverID != abi.RDMA_DRIVER_RXE || d.Index < 0 || d.ABIVersion != 2 || d.Path != "/dev/infiniband/uverbs"+fmt.Sprint(i) {
			t.Errorf("device %d: %+v (GUID %s, want %s; driver id and index come from netlink)", i, d, g, want)
		}
	}
}

func TestVMQueries(t *testing.T) {
	vmtest.Require(t)
	c := vmOpen(t, vmtest.Dev0)
	a, err := c.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	if a.VendorID != 0xffffff || a.PhysPortCnt != 1 || a.FWVer == "" {
		t.Errorf("device %+v", a)
	}
	p, err := c.QueryPort(1)
	if err != nil || p.State != rdma.PortActive || p.LinkLayer != rdma.LinkLayerEthernet {
		t.Fatalf("port %+v, %v", p, err)
	}
	if _, err := c.QueryPort(2); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("QueryPort(2): %v", err)
	}
	gids, err := c.QueryGIDTable()
	if err != nil || len(gids) < 2 {
		t.Fatalf("GID table %+v, %v", gids, err)
	}
	if gids[0].GID.Hex() != vmtest.GID0 || gids[0].Type != GIDTypeRoCEv2 {
		t.Errorf("GID 0 %s %v, want %s", gids[0].GID.Hex(), gids[0].Type, vmtest.GID0)
	}
	into := make([]GIDEntry, len(gids)+1)
	if n, err := c.QueryGIDTableInto(into); n != len(gids) || err != nil || into[0] != gids[0] {
		t.Errorf("QueryGIDTableInto = %d, %v; want %d entries as QueryGIDTable's", n, err, len(gids))
	}
	if _, err := c.QueryGIDTableInto(into[:1]); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("QueryGIDTableInto with room for 1 of %d: %v, want EINVAL", len(gids), err)
	}
	g, err := c.QueryGID(1, 0)
	if err != nil || g != gids[0] {
		t.Errorf("QueryGID(1, 0) = %+v, %v", g, err)
	}
	if _, err := c.QueryGID(1, 1000); !errors.Is(err, syscall.ENODATA) {
		t.Errorf("QueryGID of an empty entry: %v", err)
	}
	if _, err := c.QueryContext(); !errors.Is(err, ErrNotSupported) {
		t.Errorf("QueryContext on rxe: %v", err)
	}
	if n := testing.AllocsPerRun(100, func() { c.QueryPort(1) }); n != 0 {
		t.Errorf("QueryPort allocates %v times per call on Linux", n)
	}
}

// The PD/CQ/QP lifecycle on rxe, with RC QPs on rxe0 and rxe1 driven to
// RTS against each other.
func TestVMLifecycleRC(t *testing.T) {
	vmtest.Require(t)
	ctxs := []*Context{vmOpen(t, vmtest.Dev0), vmOpen(t, vmtest.Dev1)}
	var qps [2]*QP
	var gids [2]rdma.GID
	for i, c := range ctxs {
		ch, err := c.CreateCompChannel()
		if err != nil {
			t.Fatal(err)
		}
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		cq, err := c.CreateCQ(CQAttr{CQE: 16, Channel: ch, CompVector: i % c.NumCompVectors()})
		if err != nil {
			t.Fatal(err)
		}
		if err := cq.ReqNotify(false); err != nil {
			t.Fatal(err)
		}
		qps[i], err = pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: rcCap(), SQSigAll: true})
		if err != nil {
			t.Fatal(err)
		}
		gids[i] = portGID(t, c).GID
		if cq.res.nmaps != 1 || qps[i].res.nmaps != 2 {
			t.Errorf("mapped queues: CQ %d, QP %d", cq.res.nmaps, qps[i].res.nmaps)
		}
	}
	connectRC(t, qps[0], qps[1], gids[0], gids[1])
	for i, qp := range qps {
		a, init, err := qp.Query(QPAttrState | QPAttrDestQPN | QPAttrAV | QPAttrPathMTU | QPAttrCap)
		if err != nil {
			t.Fatal(err)
		}
		if a.State != QPStateRTS || a.DestQPNum != qps[1-i].Num() || a.PathMTU != MTU1024 || a.AH.GRH.DGID != gids[1-i] || !init.SQSigAll {
			t.Errorf("QP %d: %+v %+v", i, a, init)
		}
	}
	// UD too.
	pd, _ := ctxs[0].AllocPD()
	cq, _ := ctxs[0].CreateCQ(CQAttr{CQE: 8})
	ud, err := pd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: cq, Cap: rcCap()})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		a QPAttr
		m QPAttrMask
	}{
		{QPAttr{State: QPStateInit, Port: 1, QKey: 0x11111111}, QPAttrState | QPAttrPKeyIndex | QPAttrPort | QPAttrQKey},
		{QPAttr{State: QPStateRTR}, QPAttrState},
		{QPAttr{State: QPStateRTS, SQPSN: 7}, QPAttrState | QPAttrSQPSN},
	} {
		if err := ud.Modify(&s.a, s.m); err != nil {
			t.Fatalf("UD to %v: %v", s.a.State, err)
		}
	}
	// Busy objects, then an explicit teardown of the UD set.
	if err := pd.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("PD with a QP: %v", err)
	}
	for _, f := range []func() error{ud.Close, cq.Close, pd.Close} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
}

// A RAW_PACKET QP as an unprivileged user fails with os.ErrPermission (the
// core's CAP_NET_RAW check); as root rxe answers EOPNOTSUPP.
func TestVMRawPacket(t *testing.T) {
	vmtest.Require(t)
	if os.Getenv("UVERBS_RAW_CHILD") == "1" {
		rawPacketChild(t)
		return
	}
	if os.Geteuid() != 0 {
		rawPacketChild(t)
		return
	}
	// As root: EOPNOTSUPP from rxe after the capability check passed.
	c := vmOpen(t, vmtest.Dev0)
	pd, _ := c.AllocPD()
	cq, _ := c.CreateCQ(CQAttr{CQE: 8})
	_, err := pd.CreateQP(QPInitAttr{Type: QPTypeRawPacket, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxRecvWR: 8, MaxRecvSGE: 1}})
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("RAW_PACKET on rxe as root: %v", err)
	}
	// Again as uid 1000, in a child process.
	cmd := exec.Command(os.Args[0], "-test.run=^TestVMRawPacket$", "-test.v")
	cmd.Env = append(os.Environ(), "UVERBS_RAW_CHILD=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000}}
	out, err := cmd.CombinedOutput()
	t.Logf("as uid 1000:\n%s", out)
	if err != nil {
		t.Errorf("child: %v", err)
	}
}

func rawPacketChild(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Fatal("the child runs as root")
	}
	c := vmOpen(t, vmtest.Dev0)
	pd, cq := pdAndCQ(t, c)
	_, err := pd.CreateQP(QPInitAttr{Type: QPTypeRawPacket, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxRecvWR: 8, MaxRecvSGE: 1}})
	if !errors.Is(err, os.ErrPermission) || !errors.Is(err, syscall.EPERM) {
		t.Fatalf("RAW_PACKET as uid %d: %v, want os.ErrPermission", os.Geteuid(), err)
	}
	t.Logf("uid %d: %v", os.Geteuid(), err)
}

// resourceCounts is `rdma resource show` for dev: pd, cq, qp, ctx … counts.
func resourceCounts(t *testing.T, dev string) map[string]uint64 {
	t.Helper()
	res, err := netlink.RdmaResourceList()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Name == dev {
			return r.RdmaResourceSummaryEntries
		}
	}
	t.Fatalf("no resources for %s", dev)
	return nil
}

// 10,000 create/destroy cycles leave the process's descriptors and the
// kernel's resource counts (`rdma resource show`) where they started.
func TestVMCycles(t *testing.T) {
	vmtest.Require(t)
	fds0, res0, live0 := systest.OpenFDs(t), resourceCounts(t, vmtest.Dev0), len(sys.Live())
	start := time.Now()
	c, err := Open(vmtest.Dev0, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := c.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	const n = 10000
	for i := 0; i < n; i++ {
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		cq, err := c.CreateCQ(CQAttr{CQE: 16, Channel: ch})
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: rcCap()})
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		for _, f := range []func() error{qp.Close, cq.Close, pd.Close} {
			if err := f(); err != nil {
				t.Fatalf("cycle %d: %v", i, err)
			}
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	objects := time.Since(start)
	// Whole contexts too, left for Close to tear down.
	for i := 0; i < 500; i++ {
		c, err := Open(vmtest.Dev0, nil)
		if err != nil {
			t.Fatalf("context %d: %v", i, err)
		}
		pd, _ := c.AllocPD()
		cq, _ := c.CreateCQ(CQAttr{CQE: 4})
		if _, err := pd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: cq, Cap: rcCap()}); err != nil {
			t.Fatalf("context %d: %v", i, err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	fds1, res1, live1 := systest.OpenFDs(t), resourceCounts(t, vmtest.Dev0), len(sys.Live())
	t.Logf("%d PD+CQ+QP cycles in %v; descriptors %d → %d; resources %v → %v", n, objects, fds0, fds1, res0, res1)
	if fds1 != fds0 || live1 != live0 {
		t.Errorf("descriptors: %d → %d (tracked %d → %d)", fds0, fds1, live0, live1)
	}
	for k, v := range res0 {
		if res1[k] != v {
			t.Errorf("rdma resource %s: %d → %d", k, v, res1[k])
		}
	}
}

// A device removed while in use (`rdma link delete rxe1` with objects
// open). rxe has no disassociate_ucontext, so the kernel's
// ib_uverbs_remove_one deletes the character device at once but then waits
// for every open file to close: the delete blocks until Close, and calls in
// the meantime still reach the device. What must hold: new opens fail with
// an error naming the device, nothing panics, Close succeeds and lets the
// removal finish. (The EIO path of drivers that disassociate is unit-tested
// against the fake kernel: TestDeviceRemoval.) rxe1 is added back
// afterwards.
func TestVMDeviceRemoval(t *testing.T) {
	vmtest.Require(t)
	c, err := Open(vmtest.Dev1, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := c.CreateCompChannel()
	pd, _ := c.AllocPD()
	cq, err := c.CreateCQ(CQAttr{CQE: 16, Channel: ch})
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: rcCap()})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 4)
	go func() {
		for {
			e, err := c.AsyncEvent(context.Background())
			if err != nil {
				events <- "error: " + err.Error()
				return
			}
			events <- e.String()
		}
	}()
	t.Cleanup(func() {
		if _, err := netlink.RdmaLinkByName(vmtest.Dev1); err == nil {
			return
		}
		if err := netlink.RdmaLinkAdd(vmtest.Dev1, "rxe", vmtest.Net1); err != nil {
			t.Errorf("add %s back: %v", vmtest.Dev1, err)
		}
	})
	del := exec.Command("rdma", "link", "delete", vmtest.Dev1)
	var delOut strings.Builder
	del.Stdout, del.Stderr = &delOut, &delOut
	if err := del.Start(); err != nil {
		t.Fatal(err)
	}
	delDone := make(chan error, 1)
	go func() { delDone <- del.Wait() }()
	// The uverbs node goes first.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(c.Device().Path); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there 10 s after rdma link delete", c.Device().Path)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err = Open(vmtest.Dev1, nil)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), vmtest.Dev1) {
		t.Errorf("Open of the removed device: %v (want os.ErrNotExist naming %s)", err, vmtest.Dev1)
	}
	t.Logf("Open after removal: %v", err)
	// Calls on the open context: whatever they answer, they answer.
	_, qerr := c.QueryPort(1)
	_, perr := c.AllocPD()
	merr := qp.Modify(&QPAttr{State: QPStateInit, Port: 1, AccessFlags: AccessLocalWrite},
		QPAttrState|QPAttrPKeyIndex|QPAttrPort|QPAttrAccessFlags)
	t.Logf("while the removal waits: QueryPort: %v; AllocPD: %v; Modify: %v", qerr, perr, merr)
	for _, err := range []error{qerr, perr, merr} {
		if err != nil && !strings.Contains(err.Error(), vmtest.Dev1) {
			t.Errorf("%v does not name the device", err)
		}
	}
	select {
	case err := <-delDone:
		t.Logf("rdma link delete returned before Close: %v %s", err, delOut.String())
	case <-time.After(time.Second):
		t.Log("rdma link delete is waiting for the open file, as ib_uverbs_remove_one does for drivers without disassociate")
	}
	if err := qp.Close(); err != nil {
		t.Errorf("QP Close during removal: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close during removal: %v", err)
	}
	select {
	case err := <-delDone:
		if err != nil {
			t.Errorf("rdma link delete: %v %s", err, delOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("rdma link delete did not finish after Close")
	}
	select {
	case e := <-events:
		t.Logf("pending AsyncEvent ended with: %s", e)
	case <-time.After(5 * time.Second):
		t.Error("Close did not end the pending AsyncEvent")
	}
	if _, err := os.Stat("/sys/class/infiniband/" + vmtest.Dev1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still in sysfs: %v", vmtest.Dev1, err)
	}
}

// Reads of the async event file and a completion channel honour a
// context: a deadline, and a cancellation while the read waits in the
// runtime poller.
func TestVMEventsHonourContext(t *testing.T) {
	vmtest.Require(t)
	c := vmOpen(t, vmtest.Dev0)
	ch, err := c.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := c.AsyncEvent(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("AsyncEvent past a deadline: %v", err)
	}
	cctx, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel2)
	start := time.Now()
	if _, err := ch.GetEvent(cctx); !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Errorf("GetEvent cancelled while waiting: %v after %v", err, time.Since(start))
	}
	// The next read is not spoiled by the earlier cancellation.
	ctx3, cancel3 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel3()
	start = time.Now()
	if _, err := ch.GetEvent(ctx3); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 40*time.Millisecond {
		t.Errorf("GetEvent after a cancelled one: %v after %v", err, time.Since(start))
	}
}
