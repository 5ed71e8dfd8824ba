//go:build integration

package counters_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/flow"
	"github.com/purerdma/rdma/integration/vmtest"
	"github.com/purerdma/rdma/internal/testmodel/verbstest"
)

// The rules of ibv_attach_counters_point_flow(3) and ibv_read_counters(3),
// each a script run twice on mock0 in one boot: by rdma-core 44's
// libibverbs with libmlx5 (integration/countersc, the C peer) and by this
// library. Between the steps the test sends the same real frames. Both
// sides must answer every step alike (errno, values) and the device must
// have received the same counters and flow requests from both.
var sideBySide = []struct {
	rule   string
	script []string // countersc's commands; "frames MAC N SIZE" is the test's
}{
	{"create", []string{"create a", "destroy a"}},
	{"static attach of PACKETS and BYTES", []string{
		"create a", "attach a 0 0", "attach a 1 1", "flow f a 00:01:02:03:04:05",
		"frames 00:01:02:03:04:05 20 100", "read a 2 0", "unflow f", "destroy a"}},
	{"dynamic attach (a flow given) is ENOTSUP", []string{
		"create a", "attach a 0 0", "flow f a 00:01:02:03:04:05", "create b", "attach b 0 0 f",
		"unflow f", "destroy a", "destroy b"}},
	{"attach while bound is EBUSY", []string{
		"create a", "attach a 0 0", "flow f a 00:01:02:03:04:05", "attach a 1 1", "unflow f", "destroy a"}},
	{"the same index attached twice: values add", []string{
		"create a", "attach a 0 0", "attach a 1 0", "attach a 0 1", "attach a 0 1", "flow f a 00:01:02:03:04:05",
		"frames 00:01:02:03:04:05 3 64", "read a 2 0", "unflow f", "destroy a"}},
	{"one object on two flows: values add", []string{
		"create a", "attach a 0 0", "attach a 1 1", "flow f a 00:01:02:03:04:05", "flow g a 00:01:02:03:04:06",
		"frames 00:01:02:03:04:05 2 100", "frames 00:01:02:03:04:06 3 60", "read a 2 0",
		"unflow f", "unflow g", "destroy a"}},
	{"read with PREFER_CACHED", []string{
		"create a", "attach a 0 0", "attach a 1 1", "flow f a 00:01:02:03:04:05",
		"frames 00:01:02:03:04:05 1 80", "read a 2 1", "frames 00:01:02:03:04:05 1 80", "read a 2 1",
		"unflow f", "destroy a"}},
	{"a read buffer shorter than the largest index + 1", []string{
		"create a", "attach a 0 0", "attach a 1 4", "flow f a 00:01:02:03:04:05",
		"frames 00:01:02:03:04:05 1 64", "read a 4 0", "read a 5 0", "unflow f", "destroy a"}},
	{"destroy while bound is EBUSY", []string{
		"create a", "attach a 0 0", "flow f a 00:01:02:03:04:05", "destroy a", "unflow f", "destroy a"}},
	{"unbind, then attach again", []string{
		"create a", "attach a 0 0", "flow f a 00:01:02:03:04:05", "frames 00:01:02:03:04:05 2 60",
		"unflow f", "attach a 1 1", "flow g a 00:01:02:03:04:05", "frames 00:01:02:03:04:05 1 60",
		"read a 2 0", "unflow g", "destroy a"}},
}

// stepper runs one command and returns its answer: "ok", "ok V...", or
// "err ERRNO".
type stepper func(cmd string) string

func countersc(t *testing.T) string {
	t.Helper()
	vmtest.RequireAmd64Peer(t, "countersc")
	p := filepath.Join(vmtest.Repo(), "integration", ".cache", "countersc", "countersc")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the C peer is not built (make -f mk/integration.mk integration-cpeers): %v", err)
	}
	return p
}

// cSide starts countersc on mock0.
func cSide(t *testing.T) stepper {
	t.Helper()
	cmd := exec.Command(countersc(t))
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(outp)
	step := func(c string) string {
		if _, err := io.WriteString(in, c+"\n"); err != nil {
			t.Fatalf("countersc: %v", err)
		}
		l, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("countersc after %q: %v", c, err)
		}
		return strings.TrimSpace(l)
	}
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("countersc: %v", err)
		}
	})
	if a := step("open " + vmtest.MockDev); a != "ok" {
		t.Fatalf("countersc open: %s", a)
	}
	return step
}

func errAnswer(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return "err ? " + err.Error()
	}
	return fmt.Sprintf("err %d", int(errno))
}

// goSide runs the same commands through the library on mock0.
func goSide(t *testing.T) stepper {
	t.Helper()
	_, c := verbstest.MLX5Device(t)
	qp := verbstest.RawQP(t, c)
	cs := map[string]*counters.Object{}
	fl := map[string]*flow.Flow{}
	return func(cmd string) string {
		w := strings.Fields(cmd)
		num := func(i int) int { n, _ := strconv.Atoi(w[i]); return n }
		switch w[0] {
		case "create":
			x, err := counters.Create(c, nil)
			cs[w[1]] = x
			return errAnswer(err)
		case "attach":
			var f *flow.Flow
			if len(w) == 5 {
				f = fl[w[4]]
			}
			return errAnswer(cs[w[1]].Attach(counters.AttachAttr{Desc: counters.Description(num(2)), Index: uint32(num(3))}, f))
		case "flow":
			mac, _ := net.ParseMAC(w[3])
			var m flow.MAC
			copy(m[:], mac)
			f, err := flow.Create(qp, &flow.Attr{Port: 1, Specs: []flow.Spec{
				&flow.Eth{Value: flow.EthFilter{DstMAC: m}, Mask: flow.EthFilter{DstMAC: all}},
				&flow.Count{Counters: cs[w[2]]},
			}})
			fl[w[1]] = f
			return errAnswer(err)
		case "read":
			v := make([]uint64, num(2))
			if err := cs[w[1]].Read(v, counters.ReadFlags(num(3))); err != nil {
				return errAnswer(err)
			}
			s := "ok"
			for _, x := range v {
				s += " " + strconv.FormatUint(x, 10)
			}
			return s
		case "unflow":
			return errAnswer(fl[w[1]].Close())
		case "destroy":
			return errAnswer(cs[w[1]].Close())
		}
		t.Fatalf("unknown step %q", cmd)
		return ""
	}
}

// run plays a script on one side and returns its answers and the counters
// and flow requests the device received.
func run(t *testing.T, step stepper, script []string) ([]string, []string) {
	t.Helper()
	vmtest.ClearMockRequests(t)
	var answers []string
	for _, c := range script {
		if w := strings.Fields(c); w[0] == "frames" {
			mac, _ := net.ParseMAC(w[1])
			var dst [6]byte
			copy(dst[:], mac)
			n, _ := strconv.Atoi(w[2])
			size, _ := strconv.Atoi(w[3])
			verbstest.Frames(t, nil, dst, uint64(n), uint64(size))
			continue
		}
		answers = append(answers, step(c))
	}
	var reqs []string
	for _, l := range vmtest.MockRequests(t) {
		for _, p := range []string{"create_counters", "destroy_counters", "create_flow", "destroy_flow", "read_counters"} {
			if strings.HasPrefix(l, p) {
				reqs = append(reqs, l)
			}
		}
	}
	return answers, reqs
}

func TestVMSideBySideWithLibmlx5(t *testing.T) {
	vmtest.RequireMock(t)
	countersc(t)
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-52s | %-28s | %-28s | same\n", "rule", "C (libmlx5)", "Go")
	for _, r := range sideBySide {
		// Each side on a context of its own, closed before the other runs.
		var cAns, cReq, gAns, gReq []string
		t.Run("C/"+r.rule, func(t *testing.T) { cAns, cReq = run(t, cSide(t), r.script) })
		t.Run("Go/"+r.rule, func(t *testing.T) { gAns, gReq = run(t, goSide(t), r.script) })
		same := strings.Join(cAns, ";") == strings.Join(gAns, ";") && strings.Join(cReq, "\n") == strings.Join(gReq, "\n")
		fmt.Fprintf(&table, "%-52s | %-28s | %-28s | %v\n", r.rule, brief(r.script, cAns), brief(r.script, gAns), same)
		if strings.Join(cAns, ";") != strings.Join(gAns, ";") {
			t.Errorf("%s: answers differ\nC:  %q\nGo: %q", r.rule, cAns, gAns)
		}
		if strings.Join(cReq, "\n") != strings.Join(gReq, "\n") {
			t.Errorf("%s: the device received different requests\nC:\n%s\nGo:\n%s", r.rule, strings.Join(cReq, "\n"), strings.Join(gReq, "\n"))
		}
		if len(cReq) == 0 {
			t.Errorf("%s: the device recorded nothing", r.rule)
		}
	}
	t.Logf("side by side on %s, Linux %s:%s", vmtest.MockDev, vmtest.Kernel(), table.String())
	// go test shows a passing test's log only with -v: the table also goes
	// to a report that make integration prints after the run.
	dir := filepath.Join(vmtest.Repo(), "integration", ".cache", "reports")
	report := fmt.Sprintf("counters side by side with rdma-core 44 (libmlx5) on %s, Linux %s:%s", vmtest.MockDev, vmtest.Kernel(), table.String())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sidebyside-"+vmtest.Kernel()+".txt"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
}

// brief is what the table shows of a side's answers: the failures and
// the values read.
func brief(script, answers []string) string {
	var out []string
	i := 0
	for _, c := range script {
		if strings.HasPrefix(c, "frames") {
			continue
		}
		a := answers[i]
		i++
		verb := strings.Fields(c)[0]
		switch {
		case strings.HasPrefix(a, "err "):
			n, _ := strconv.Atoi(strings.TrimPrefix(a, "err "))
			out = append(out, verb+" "+errnoName(syscall.Errno(n)))
		case verb == "read":
			out = append(out, "["+strings.TrimPrefix(a, "ok ")+"]")
		}
	}
	if len(out) == 0 {
		return "all ok"
	}
	return strings.Join(out, " ")
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.EINVAL:
		return "EINVAL"
	case syscall.EBUSY:
		return "EBUSY"
	case syscall.EOPNOTSUPP:
		return "ENOTSUP"
	}
	return strconv.Itoa(int(e))
}
