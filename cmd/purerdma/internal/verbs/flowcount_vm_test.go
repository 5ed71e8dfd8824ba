//go:build integration

package verbs

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma/integration/vmtest"
)

// On rxe, which has no verbs counters, flowcount exits 1 with one line that
// names the device — in process, as the installed binary, and as uid 1000.
func TestVMFlowcountOnRxe(t *testing.T) {
	env := DefaultEnv()
	vmtest.Require(t)
	args := []string{"flowcount", "-d", vmtest.Dev0, "-p", "1", "--dst-mac", "00:01:02:03:04:05"}
	out, errs, code := env.runTool(args...)
	check := func(who, out, errs string, code int) {
		t.Helper()
		if code != 1 || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "flowcount: "+vmtest.Dev0+": ") ||
			!strings.Contains(errs, "counters are not supported") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", who, code, out, errs)
		}
		t.Logf("%s on %s: exit %d: %s", who, vmtest.Kernel(), code, strings.TrimSpace(errs))
	}
	check("in process", out, errs, code)
	for _, uid := range []uint32{0, 1000} {
		cmd := exec.Command("purerdma", args...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		check("purerdma as uid "+itoa(uid), o.String(), e.String(), code)
	}
}

func itoa(u uint32) string { return strconv.FormatUint(uint64(u), 10) }

// `purerdma counters -d rxe0` lists sent_pkts, and its value moves after
// ibv_rc_pingpong traffic.
func TestVMCountersCommand(t *testing.T) {
	env := DefaultEnv()
	vmtest.Require(t)
	sent := func() map[string]uint64 {
		out, errs, code := env.runTool("counters", "-d", vmtest.Dev0, "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var sets []struct {
			Source   string `json:"source"`
			Counters []struct {
				Name  string `json:"name"`
				Value uint64 `json:"value"`
			} `json:"counters"`
		}
		if err := json.Unmarshal([]byte(out), &sets); err != nil {
			t.Fatal(err)
		}
		m := map[string]uint64{}
		for _, s := range sets {
			for _, c := range s.Counters {
				if c.Name == "sent_pkts" {
					m[s.Source] = c.Value
				}
			}
		}
		if len(m) != 2 {
			t.Fatalf("sent_pkts in %d sets: %s", len(m), out)
		}
		return m
	}
	text, _, code := env.runTool("counters", "-d", vmtest.Dev0)
	if code != 0 || !strings.Contains(text, "sent_pkts") {
		t.Fatalf("exit %d:\n%s", code, text)
	}
	t.Logf("purerdma counters -d %s on %s:\n%s", vmtest.Dev0, vmtest.Kernel(), text)
	before := sent()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := (vmtest.Pingpong{Iters: 100, Size: 512}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // past hw_counters' lifespan
	after := sent()
	for src, v := range after {
		if v < before[src]+100 {
			t.Errorf("%s sent_pkts %d → %d", src, before[src], v)
		}
		t.Logf("%s sent_pkts: %d → %d", src, before[src], v)
	}
}

// The example of ibv_read_counters(3) for real: flowcount on mock0 counts
// the frames that arrive for a MAC, exactly: twenty 100-byte frames are
// PACKETS 20, BYTES 2000. The MAC is one no other traffic on the link
// uses: veth1's own gets the kernel's neighbour probes (unicast IPv6
// neighbour solicitations, 86 bytes, one a second while an entry is
// probed after earlier tests' traffic), which the flow would count too.
func TestVMFlowcountOnMock(t *testing.T) {
	vmtest.RequireMock(t)
	const dst = "02:00:00:00:f1:0c" // locally administered, owned by nobody
	// Earlier tests' traffic would count too: wait until the port is
	// quiet.
	vmtest.WaitQuiet(t, 2*time.Second)
	cmd := exec.Command("purerdma", "flowcount", "-d", vmtest.MockDev, "--dst-mac", dst, "--interval", "1s", "--count", "3")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for its flow, then send.
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile("/sys/kernel/debug/mockrdma/mock0/flows")
		if strings.Contains(string(b), "flow ") {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("flowcount created no flow in 30 s; stderr %q", e.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	mac, _ := net.ParseMAC(dst)
	f := &vmtest.Frame{Len: 100}
	copy(f.Dst[:], mac)
	vmtest.SendFrames(t, 20, f)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, e.String())
	}
	lines := strings.Split(strings.TrimSpace(o.String()), "\n")
	if len(lines) != 3 || lines[2] != "PACKETS = 20, BYTES = 2000" {
		t.Fatalf("flowcount printed %q (stderr %q)", o.String(), e.String())
	}
	t.Logf("%s on Linux %s:\n%s", vmtest.MockDev, vmtest.Kernel(), o.String())
}

// flowcount --receive on mock0: the frames the flow counts also arrive in
// the RAW_PACKET QP's receive queue, and flowcount shows both: twenty
// 100-byte frames are PACKETS 20, BYTES 2000, RECEIVED 20, RECEIVED BYTES
// 2000.
func TestVMFlowcountReceiveOnMock(t *testing.T) {
	vmtest.RequireMock(t)
	const dst = "02:00:00:00:f1:0d"
	vmtest.WaitQuiet(t, 2*time.Second)
	cmd := exec.Command("purerdma", "flowcount", "-d", vmtest.MockDev, "--dst-mac", dst, "--interval", "1s", "--count", "3", "--receive", "64")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile("/sys/kernel/debug/mockrdma/mock0/flows")
		if strings.Contains(string(b), "flow ") {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("flowcount created no flow in 30 s; stderr %q", e.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	mac, _ := net.ParseMAC(dst)
	f := &vmtest.Frame{Len: 100}
	copy(f.Dst[:], mac)
	vmtest.SendFrames(t, 20, f)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, e.String())
	}
	lines := strings.Split(strings.TrimSpace(o.String()), "\n")
	if len(lines) != 3 || lines[2] != "PACKETS = 20, BYTES = 2000, RECEIVED = 20, RECEIVED BYTES = 2000" {
		t.Fatalf("flowcount --receive printed %q (stderr %q)", o.String(), e.String())
	}
	t.Logf("%s on Linux %s:\n%s", vmtest.MockDev, vmtest.Kernel(), o.String())
}
