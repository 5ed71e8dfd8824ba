package exporter

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/purerdma/rdma/internal/testmodel/sysfstest"
)

// stormDevices is the synthetic host's size: mlx5-like devices of two
// ports each (writing the tree is most of the test's time).
const stormDevices = 64

// emfile is what a process out of file descriptors says.
const emfile = "too many open files"

// logWatch keeps a process's log and closes emfileSeen when it says
// emfile.
type logWatch struct {
	syncBuffer
	once       sync.Once
	emfileSeen chan struct{}
}

func (w *logWatch) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if strings.Contains(w.String(), emfile) {
		w.once.Do(func() { close(w.emfileSeen) })
	}
	return n, err
}

// stormProc is the rdma_exporter binary running.
type stormProc struct {
	cmd     *exec.Cmd
	metrics string // its metrics URL
	addr    string // host:port
	stderr  *logWatch
	exited  chan error
	stopped func() error // stop's once
}

// startBinary runs argv (the exporter, or prlimit running it) and waits
// for the exporter to say where it serves. The test's end stops it.
func startBinary(t *testing.T, argv ...string) *stormProc {
	t.Helper()
	p := &stormProc{cmd: exec.Command(argv[0], argv[1:]...), stderr: &logWatch{emfileSeen: make(chan struct{})}, exited: make(chan error, 1)}
	p.stopped = sync.OnceValue(func() error {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.exited:
			return err
		case <-time.After(20 * time.Second):
			p.cmd.Process.Kill()
			t.Errorf("the exporter still runs 20 s after SIGTERM")
			return <-p.exited
		}
	})
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() { p.stop() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("%s said nothing (%v): %s", argv, err, p.stderr)
	}
	p.metrics = strings.TrimSpace(strings.TrimPrefix(line, "rdma_exporter: serving "))
	p.addr = strings.TrimSuffix(strings.TrimPrefix(p.metrics, "http://"), "/metrics")
	return p
}

// stop sends SIGTERM (once) and returns the exit error (nil for status
// 0).
func (p *stormProc) stop() error { return p.stopped() }

// fds counts the process's open file descriptors.
func (p *stormProc) fds() int {
	d, err := os.Open(fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return -1
	}
	return len(names)
}

// httpScrape GETs url with a client of its own, and returns the status,
// the body and the time it took.
func httpScrape(url string, timeout time.Duration) (int, string, time.Duration, error) {
	c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	t0 := time.Now()
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", time.Since(t0), err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), time.Since(t0), err
}

// fullScrape scrapes url and checks it is the whole exposition of the
// synthetic host: every device's info series and every source up. It
// returns the time it took and process_open_fds.
func fullScrape(t *testing.T, url string) (time.Duration, float64) {
	t.Helper()
	code, body, d, err := httpScrape(url, 30*time.Second)
	if err != nil || code != 200 {
		t.Fatalf("GET %s: %d %v after %v", url, code, err, d)
	}
	mfs := parseText(t, body)
	devs := map[string]bool{}
	for _, m := range mfs["node_infiniband_info"].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "device" {
				devs[l.GetValue()] = true
			}
		}
	}
	if len(devs) != stormDevices {
		t.Fatalf("%d devices' info series, want %d", len(devs), stormDevices)
	}
	for _, m := range mfs["rdma_exporter_source_up"].GetMetric() {
		if m.GetGauge().GetValue() != 1 {
			t.Fatalf("source down: %v", m)
		}
	}
	fds := mfs["process_open_fds"].GetMetric()
	if len(fds) != 1 {
		t.Fatal("no process_open_fds")
	}
	return d, fds[0].GetGauge().GetValue()
}

// TestScrapeAfterAStorm is the exporter's HTTP robustness, on the real
// binary with its file descriptors bounded: against a synthetic host of
// 64 devices, under a descriptor limit of 256 (`prlimit --nofile=256`;
// it holds about 40 at rest, its sysfs files bounded by a FileLimit), it
// takes 300 idle keep-alive connections and
// then 500 scrapes at once whose clients give up after 50 ms, and a
// scrape after that is still answered in full. Neither the connections
// (connLimiter, at its default bound) nor the scrapes (one gather at a
// time, at most --web.max-requests in flight) run it out of descriptors,
// which the same 300 connections do with --web.max-connections=0.
func TestScrapeAfterAStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the exporter and runs a connection storm (-short)")
	}
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux's /proc and prlimit")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit (util-linux) on PATH: the storm runs the exporter under a file descriptor limit with it")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH:", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "rdma_exporter")
	// Built as this test was (-race too), so that the go command finds
	// the packages compiled already.
	buildArgs := []string{"build", "-o", bin}
	if raceEnabled {
		buildArgs = append(buildArgs, "-race")
	}
	build := exec.Command(gobin, append(buildArgs, "github.com/purerdma/rdma/cmd/rdma_exporter")...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := exec.Command(bin, "--version").Run(); errors.Is(err, syscall.ENOEXEC) {
		// Under qemu-user (make test-arm64) the test runs emulated, but
		// a binary it starts is not, without binfmt_misc.
		t.Skipf("the built exporter cannot be run here: %v", err)
	}
	root := filepath.Join(dir, "sys")
	if err := sysfstest.Synthetic(root, stormDevices, 2); err != nil {
		t.Fatal(err)
	}
	if err := sysfstest.SyntheticCounters(root, stormDevices, 2); err != nil {
		t.Fatal(err)
	}
	args := []string{bin, "--web.listen-address=127.0.0.1:0", "--path.sysfs=" + root}

	// What it holds at rest, without a limit: a few dozen descriptors,
	// whatever the number of devices (TestOpenFilesBounded).
	p := startBinary(t, args...)
	fullScrape(t, p.metrics)
	_, rest := fullScrape(t, p.metrics)
	if err := p.stop(); err != nil {
		t.Fatalf("exit: %v: %s", err, p.stderr)
	}
	if rest > 64 {
		t.Errorf("%v descriptors open at rest with %d devices, want at most 64", rest, stormDevices)
	}
	const limit = 256

	p = startBinary(t, append([]string{prlimit, "--nofile=" + strconv.Itoa(limit), "--"}, args...)...)
	fullScrape(t, p.metrics) // the first discovers the devices
	var base []time.Duration
	for range 3 {
		d, _ := fullScrape(t, p.metrics)
		base = append(base, d)
	}
	slices.Sort(base)
	atRest := p.fds()

	// The peak of its descriptors while the storm lasts.
	peak, sampling := 0, make(chan struct{})
	var sampled sync.WaitGroup
	sampled.Add(1)
	go func() {
		defer sampled.Done()
		for {
			peak = max(peak, p.fds())
			select {
			case <-sampling:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()

	// 300 idle keep-alive connections, each after a GET of /.
	idle, answered := make([]*keptConn, 300), 0
	for i := range idle {
		idle[i] = dialKept(t, p.addr)
		if code, err := idle[i].get("/"); err == nil && code == 200 {
			answered++
		}
	}

	if answered != len(idle) {
		t.Errorf("%d of %d connections answered, one after the other", answered, len(idle))
	}

	// 500 scrapes at once, given up after 50 ms.
	const storm = 500
	var (
		mu       sync.Mutex
		outcomes = map[string]int{}
		wg       sync.WaitGroup
		start    = make(chan struct{})
	)
	for range storm {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			code, _, _, err := httpScrape(p.metrics, 50*time.Millisecond)
			what := strconv.Itoa(code)
			if err != nil {
				what = "gave up"
				if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
					what = "error"
				}
			}
			mu.Lock()
			outcomes[what]++
			mu.Unlock()
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	stormTook := time.Since(t0)

	// The scrape after it.
	after, afterFDs := fullScrape(t, p.metrics)
	close(sampling)
	sampled.Wait()
	stillOpen := 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.r.ReadByte(); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				stillOpen++
			}
		}
		c.Close()
	}
	t.Logf("%d devices, descriptor limit %d (%d open at rest without it); %d open at rest, %d at the peak, %d after the storm (process_open_fds during the last scrape: %v)",
		stormDevices, limit, int(rest), atRest, peak, p.fds(), afterFDs)
	t.Logf("baseline scrapes %v (median %v); %d of 300 idle connections answered, %d still open after the storm; storm of %d over %v: %v; the scrape after it: %v",
		base, base[1], answered, stillOpen, storm, stormTook.Round(time.Millisecond), outcomes, after)
	if err := p.stop(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	if logs := p.stderr.String(); strings.Contains(logs, emfile) {
		t.Errorf("the exporter ran out of file descriptors:\n%s", logs)
	}

	// The control: without the bound, the idle connections alone use the
	// descriptors up.
	p = startBinary(t, append([]string{prlimit, "--nofile=" + strconv.Itoa(limit), "--"}, append(args, "--web.max-connections=0")...)...)
	fullScrape(t, p.metrics)
	for range 300 {
		c := dialKept(t, p.addr)
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: exporter\r\n\r\n")
	}
	select {
	case <-p.stderr.emfileSeen:
		t.Logf("with --web.max-connections=0, 300 idle connections: %q in its log, %d descriptors open", emfile, p.fds())
	case <-time.After(20 * time.Second):
		t.Errorf("with --web.max-connections=0 300 idle connections did not use the descriptors up (%d open, limit %d): the storm shows nothing", p.fds(), limit)
	}
}
