//go:build integration

package flow_test

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/uverbs"
)

const childEnv = "FLOW_VM_CHILD"

// asUser1000 runs the test named name again as uid 1000 and fails when the
// child fails; it reports whether this process is that child.
func asUser1000(t *testing.T, name string) (child bool) {
	if os.Getenv(childEnv) == name || os.Geteuid() != 0 {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+name)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000}}
	out, err := cmd.CombinedOutput()
	t.Logf("as uid 1000:\n%s", out)
	if err != nil {
		t.Errorf("child: %v", err)
	}
	return false
}

func vmQP(t *testing.T, typ uverbs.QPType) (*uverbs.QP, error) {
	t.Helper()
	c, err := uverbs.Open(vmtest.Dev0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(uverbs.CQAttr{CQE: 16})
	if err != nil {
		t.Fatal(err)
	}
	return pd.CreateQP(uverbs.QPInitAttr{Type: typ, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
}

// rxe has no flow steering: a flow on a UD QP is ErrNotSupported
// (EOPNOTSUPP), whoever asks.
func TestVMFlowOnUDQP(t *testing.T) {
	vmtest.Require(t)
	asUser1000(t, "TestVMFlowOnUDQP") // and as root below
	qp, err := vmQP(t, uverbs.QPTypeUD)
	if err != nil {
		t.Fatal(err)
	}
	_, err = flow.Create(qp, &flow.Attr{Port: 1, Specs: []flow.Spec{&flow.Eth{
		Value: flow.EthFilter{DstMAC: flow.MAC{0, 1, 2, 3, 4, 5}}, Mask: flow.EthFilter{DstMAC: flow.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}}}})
	if !errors.Is(err, flow.ErrNotSupported) || !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Fatalf("uid %d: %v", os.Geteuid(), err)
	}
	t.Logf("%s, uid %d: %v", vmtest.Kernel(), os.Geteuid(), err)
}

// The RAW_PACKET QP a flow (and flowcount) needs: an unprivileged user
// gets os.ErrPermission (the core's CAP_NET_RAW check comes before rxe's
// EOPNOTSUPP, which root gets).
func TestVMRawPacketQP(t *testing.T) {
	vmtest.Require(t)
	if asUser1000(t, "TestVMRawPacketQP") {
		_, err := vmQP(t, uverbs.QPTypeRawPacket)
		if !errors.Is(err, os.ErrPermission) {
			t.Fatalf("uid %d: %v, want os.ErrPermission", os.Geteuid(), err)
		}
		t.Logf("%s, uid %d: %v", vmtest.Kernel(), os.Geteuid(), err)
		return
	}
	_, err := vmQP(t, uverbs.QPTypeRawPacket)
	if !errors.Is(err, flow.ErrNotSupported) {
		t.Fatalf("as root: %v", err)
	}
	t.Logf("%s, root: %v", vmtest.Kernel(), err)
}
