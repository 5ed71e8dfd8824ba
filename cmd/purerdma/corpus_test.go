package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/purerdma/rdma/cmd/purerdma/internal/diags"
	"github.com/purerdma/rdma/cmd/purerdma/internal/verbs"
	"github.com/purerdma/rdma/counters"
	"github.com/purerdma/rdma/sysfs"
	"github.com/purerdma/rdma/umad"
	"github.com/purerdma/rdma/uverbs"
)

// The malformed-sysfs corpus (issue 15): trees generated from the rxe
// fixture, each broken one way — FIFOs, /dev/zero, 2 GiB sparse files and
// files just over a page in place of attributes, garbage values, symbolic
// link loops, directories where files belong and files where directories
// belong, bad device nodes, a 255-byte device name, 10,000 ports — and
// every public reader of packages sysfs, umad, counters and uverbs, and
// every tool that reads sysfs, run on each. Nothing may panic, hang (a
// generous 5 minutes per tree, for the race detector on a loaded host; a FIFO
// used to block for ever) or allocate more than 256 MiB in one call (a
// 2 GiB sparse file used to cost 8 GB; reading all 10,000 ports of the
// largest tree costs tens of MiB).

// corpusTree is one generated tree: a sysfs root and a device directory.
type corpusTree struct {
	name   string
	sysfs  string
	devDir string
	// big trees (10,000 ports or entries) get each reader once, not its
	// variants too: every full read of them costs seconds under -race.
	big bool
}

// corpusFiles are the attributes the broken-file cases replace, one tree
// per file and kind of breakage.
var corpusFiles = []string{
	"class/infiniband/rxe0/node_type",
	"class/infiniband/rxe0/node_guid",
	"class/infiniband/rxe0/fw_ver",
	"class/infiniband/rxe0/ports/1/state",
	"class/infiniband/rxe0/ports/1/rate",
	"class/infiniband/rxe0/ports/1/lid",
	"class/infiniband/rxe0/ports/1/link_layer",
	"class/infiniband/rxe0/ports/1/gids/0",
	"class/infiniband/rxe0/ports/1/pkeys/0",
	"class/infiniband/rxe0/ports/1/gid_attrs/types/0",
	"class/infiniband/rxe0/ports/1/hw_counters/sent_pkts",
	"class/infiniband/rxe0/ports/1/counters/port_xmit_data",
	"class/infiniband_mad/umad0/port",
	"class/infiniband_mad/umad0/ibdev",
	"class/infiniband_mad/abi_version",
	"class/infiniband_verbs/uverbs0/ibdev",
	"class/infiniband_verbs/uverbs0/abi_version",
	"class/infiniband_verbs/abi_version",
}

// corpusGarbage are values no kernel writes, per file.
var corpusGarbage = map[string][]string{
	"class/infiniband/rxe0/node_type":                       {"x", "99999999999999999999: CA", ": CA", "-1: CA", "\xff\xfe"},
	"class/infiniband/rxe0/node_guid":                       {"zz", "0000:0000:0000", "ffff:ffff:ffff:ffff:ffff"},
	"class/infiniband/rxe0/ports/1/state":                   {"", "4", "4:", "99999999999999999999: ACTIVE"},
	"class/infiniband/rxe0/ports/1/rate":                    {"fast", "-1 Gb/sec (4X EDR)", "999999999999 Gb/sec (4X EDR)", "10 Gb/sec (0X )"},
	"class/infiniband/rxe0/ports/1/lid":                     {"-1", "0x", "0xfffffffffffffffff"},
	"class/infiniband/rxe0/ports/1/gids/0":                  {"::", "fe80:0000:0000:0000:0000:0000:0000", "g"},
	"class/infiniband/rxe0/ports/1/pkeys/0":                 {"0xffffffffffff", "-1"},
	"class/infiniband/rxe0/ports/1/hw_counters/sent_pkts":   {"-1", "18446744073709551616", "1 2"},
	"class/infiniband/rxe0/ports/1/counters/port_xmit_data": {"-1", "N/A", "99999999999999999999999"},
	"class/infiniband_mad/umad0/port":                       {"x", "4294967296", "-1", "01", ""},
	"class/infiniband_mad/umad0/ibdev":                      {"../../etc", "", "rxe0/../rxe1", strings.Repeat("r", 300)},
	"class/infiniband_mad/abi_version":                      {"-5", "99999999999", "five"},
	"class/infiniband_verbs/uverbs0/abi_version":            {"-1", "x"},
}

// corpusShortEvery: under -short (make test-arm64, under qemu-user) the
// corpus is every fourth of its trees.
const corpusShortEvery = 4

// corpus builds the trees under dir.
func corpus(t *testing.T, dir string) []corpusTree {
	t.Helper()
	base := filepath.Join(dir, "base")
	copyResolved(t, filepath.Join(ibstatFixtures, "rxe-6.1"), base)
	// A PMA directory, which rxe lacks, so the PMA readers have files.
	for name, v := range map[string]string{"port_xmit_data": "1234\n", "port_rcv_data": "99\n", "symbol_error": "0\n"} {
		write(t, filepath.Join(base, "class/infiniband/rxe0/ports/1/counters", name), v)
	}
	baseDev := filepath.Join(dir, "base-dev")
	for _, n := range []string{"umad0", "umad1", "uverbs0", "uverbs1", "issm0", "issm1"} {
		write(t, filepath.Join(baseDev, n), "") // regular files: not device nodes
	}

	var trees []corpusTree
	n := 0
	tree := func(name string, mutate func(root string), mutateDev func(dev string)) {
		n++
		if testing.Short() && n%corpusShortEvery != 1 {
			return
		}
		root := filepath.Join(dir, "t"+strconv.Itoa(n))
		dev := root + "-dev"
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Fatal(err)
		}
		link(t, base, root)
		link(t, baseDev, dev)
		if mutate != nil {
			mutate(root)
		}
		if mutateDev != nil {
			mutateDev(dev)
		}
		trees = append(trees, corpusTree{name: name, sysfs: root, devDir: dev, big: strings.HasPrefix(name, "10,000")})
	}
	replace := func(root, rel string, make func(p string)) {
		p := filepath.Join(root, rel)
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		make(p)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	tree("intact", nil, nil)
	for _, rel := range corpusFiles {
		tree("fifo "+rel, func(root string) { replace(root, rel, func(p string) { must(unix.Mkfifo(p, 0o644)) }) }, nil)
		tree("dev/zero "+rel, func(root string) { replace(root, rel, func(p string) { must(os.Symlink("/dev/zero", p)) }) }, nil)
		tree("2 GiB sparse "+rel, func(root string) {
			replace(root, rel, func(p string) {
				f, err := os.Create(p)
				must(err)
				must(f.Truncate(2 << 30))
				must(f.Close())
			})
		}, nil)
		tree("a page and a byte "+rel, func(root string) {
			replace(root, rel, func(p string) { write(t, p, strings.Repeat("7", 4097)) })
		}, nil)
		tree("symlink loop "+rel, func(root string) { replace(root, rel, func(p string) { must(os.Symlink(filepath.Base(p), p)) }) }, nil)
		tree("directory "+rel, func(root string) { replace(root, rel, func(p string) { must(os.Mkdir(p, 0o755)) }) }, nil)
		tree("missing "+rel, func(root string) { replace(root, rel, func(string) {}) }, nil)
		for _, v := range corpusGarbage[rel] {
			tree(fmt.Sprintf("garbage %q in %s", v, rel), func(root string) { replace(root, rel, func(p string) { write(t, p, v+"\n") }) }, nil)
		}
	}
	for _, rel := range []string{
		"class/infiniband/rxe0", "class/infiniband/rxe0/ports", "class/infiniband/rxe0/ports/1",
		"class/infiniband/rxe0/ports/1/gids", "class/infiniband/rxe0/ports/1/hw_counters",
		"class/infiniband_mad/umad0", "class/infiniband_verbs/uverbs0", "class/infiniband", "class/infiniband_mad",
	} {
		tree("symlink loop "+rel, func(root string) { replace(root, rel, func(p string) { must(os.Symlink(filepath.Base(p), p)) }) }, nil)
		tree("file for the directory "+rel, func(root string) { replace(root, rel, func(p string) { write(t, p, "1\n") }) }, nil)
		tree("fifo for the directory "+rel, func(root string) { replace(root, rel, func(p string) { must(unix.Mkfifo(p, 0o644)) }) }, nil)
		tree("missing "+rel, func(root string) { replace(root, rel, func(string) {}) }, nil)
	}
	tree("a directory that loops to its parent", func(root string) {
		must(os.Symlink("..", filepath.Join(root, "class/infiniband/rxe0/ports/1/gids/99999")))
		must(os.Symlink("../..", filepath.Join(root, "class/infiniband/rxe0/ports/2")))
	}, nil)
	tree("port x and port 99999999999", func(root string) {
		cp(t, filepath.Join(root, "class/infiniband/rxe0/ports/1"), filepath.Join(root, "class/infiniband/rxe0/ports/x"))
		cp(t, filepath.Join(root, "class/infiniband/rxe0/ports/1"), filepath.Join(root, "class/infiniband/rxe0/ports/99999999999"))
	}, nil)
	tree("a 255-byte device name", func(root string) {
		long := strings.Repeat("d", 255)
		must(os.Rename(filepath.Join(root, "class/infiniband/rxe1"), filepath.Join(root, "class/infiniband", long)))
		write(t, filepath.Join(root, "class/infiniband_mad/umad1/ibdev"), long+"\n")
		write(t, filepath.Join(root, "class/infiniband_verbs/uverbs1/ibdev"), long+"\n")
	}, nil)
	tree("an empty tree", func(root string) { must(os.RemoveAll(filepath.Join(root, "class"))) }, nil)
	tree("10,000 ports", func(root string) {
		ports := filepath.Join(root, "class/infiniband/rxe0/ports")
		tmpl := filepath.Join(dir, "port-template")
		for f, v := range map[string]string{"state": "4: ACTIVE\n", "phys_state": "5: LinkUp\n", "rate": "10 Gb/sec (4X SDR)\n",
			"lid": "0x0\n", "link_layer": "Ethernet\n", "gids/0": "fe80:0000:0000:0000:0000:0000:0000:0001\n"} {
			write(t, filepath.Join(tmpl, f), v)
		}
		for i := 2; i <= 10000; i++ {
			link(t, tmpl, filepath.Join(ports, strconv.Itoa(i)))
		}
	}, nil)
	tree("10,000 umad entries", func(root string) {
		for i := 2; i < 10002; i++ {
			d := filepath.Join(root, "class/infiniband_mad", "umad"+strconv.Itoa(i))
			write(t, filepath.Join(d, "ibdev"), "rxe0\n")
			write(t, filepath.Join(d, "port"), strconv.Itoa(i)+"\n")
		}
	}, nil)
	// Bad device nodes: what the tools and OpenPort/OpenDevice open.
	for _, bad := range []struct {
		name string
		make func(p string)
	}{
		{"a FIFO", func(p string) { must(unix.Mkfifo(p, 0o644)) }},
		{"/dev/zero", func(p string) { must(os.Symlink("/dev/zero", p)) }},
		{"/dev/null", func(p string) { must(os.Symlink("/dev/null", p)) }},
		{"a directory", func(p string) { must(os.Mkdir(p, 0o755)) }},
		{"a symlink loop", func(p string) { must(os.Symlink(filepath.Base(p), p)) }},
		{"nothing", func(string) {}},
	} {
		tree("device nodes are "+bad.name, nil, func(dev string) {
			for _, n := range []string{"umad0", "umad1", "uverbs0", "uverbs1"} {
				p := filepath.Join(dev, n)
				must(os.RemoveAll(p))
				bad.make(p)
			}
		})
	}
	return trees
}

// TestMalformedSysfsCorpus runs every reader and tool on every tree.
func TestMalformedSysfsCorpus(t *testing.T) {
	if os.Getenv("VMRUN_GUEST") == "1" {
		t.Skip("host test: generated trees, no kernel needed")
	}
	if testing.Short() {
		t.Logf("-short: every %dth tree of the corpus (the whole writes about 100,000 files)", corpusShortEvery)
	}
	trees := corpus(t, t.TempDir())
	const hang = 5 * time.Minute
	var calls, toolRuns, isolated int
	var worst corpusAlloc
	for _, tr := range trees {
		done := make(chan struct{})
		var panicked any
		var stack []byte
		var c, r int
		var w corpusAlloc
		started := time.Now()
		go func() {
			defer close(done)
			defer func() {
				if p := recover(); p != nil {
					panicked, stack = p, debug.Stack()
				}
			}()
			c, r, w = corpusRun(tr)
		}()
		select {
		case <-done:
		case <-time.After(hang):
			buf := make([]byte, 1<<20)
			t.Fatalf("tree %q: the readers still run after %v (a hang):\n%s", tr.name, hang, buf[:runtime.Stack(buf, true)])
		}
		if panicked != nil {
			t.Errorf("tree %q: panic: %v\n%s", tr.name, panicked, stack)
			continue
		}
		if el := time.Since(started); el > 2*time.Second {
			t.Logf("tree %q took %v", tr.name, el.Round(time.Millisecond))
		}
		for _, o := range w.over {
			t.Errorf("tree %q: %s", tr.name, o)
		}
		if w.bytes > worst.bytes {
			worst = w
			worst.tree = tr.name
		}
		calls += c
		toolRuns += r
		if strings.Contains(tr.name, "infiniband_mad/umad0") || strings.Contains(tr.name, "infiniband_verbs/uverbs0") {
			isolated++
			for _, err := range corpusIsolated(tr) {
				t.Errorf("tree %q: a bad entry of rxe0 costs rxe1: %v", tr.name, err)
			}
		}
		os.RemoveAll(tr.sysfs) // keep the file count down as the corpus goes
		os.RemoveAll(tr.devDir)
	}
	t.Logf("%d trees, %d library calls, %d tool runs: no panic, no hang; the most one call allocated: %d KiB (%s on %q); %d trees with a bad rxe0 umad/uverbs entry left rxe1 whole",
		len(trees), calls, toolRuns, worst.bytes>>10, worst.call, worst.tree, isolated)
	fmt.Fprintf(os.Stderr, "CORPUS-RESULT trees=%d calls=%d toolruns=%d maxcall_kib=%d isolated=%d\n", len(trees), calls, toolRuns, worst.bytes>>10, isolated)
}

// corpusIsolated checks that a tree whose only fault is in one of rxe0's
// character device entries (umad0, uverbs0) still gives rxe1 whole,
// through sysfs and umad.Host, and rxe0 too through CA.
func corpusIsolated(tr corpusTree) []error {
	var errs []error
	fsys, err := sysfs.New(tr.sysfs)
	if err != nil {
		return []error{err}
	}
	ca, err := fsys.CA("rxe1")
	switch {
	case err != nil:
		errs = append(errs, err)
	case ca.Ports[0].Umad == nil || ca.Verbs == nil:
		errs = append(errs, fmt.Errorf("sysfs CA(rxe1) lost its umad or uverbs device"))
	}
	if _, err := fsys.Port("rxe1", 1); err != nil {
		errs = append(errs, err)
	}
	if _, err := fsys.CA("rxe0"); err != nil {
		errs = append(errs, err)
	}
	cas, _ := fsys.CAs()
	if len(cas) != 2 {
		errs = append(errs, fmt.Errorf("CAs read %d devices, want both", len(cas)))
	}
	h := &umad.Host{Sysfs: fsys, DevDir: tr.devDir}
	if _, err := h.LookupPort("rxe1", 1); err != nil {
		errs = append(errs, err)
	}
	if _, err := h.UmadNode("rxe1", 1); err != nil {
		errs = append(errs, fmt.Errorf("umad UmadNode(rxe1, 1): %w", err))
	}
	if names, err := h.CANames(); err != nil || len(names) != 2 {
		errs = append(errs, fmt.Errorf("umad CANames = %v, %v", names, err))
	}
	return errs
}

// corpusMemBound is the most one call may allocate (runtime.MemStats'
// TotalAlloc growth across the call), times raceFactor: the race detector
// makes more values escape to the heap (measured: 144 MiB without, 377 MiB
// with it, for one call reading the 10,000-port tree).
const corpusMemBound = 256 << 20

// corpusAlloc is the largest allocation of one call on a tree, and the
// calls over the bound.
type corpusAlloc struct {
	bytes      uint64
	call, tree string
	over       []string
}

func (a *corpusAlloc) measure(what string, f func()) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	grew := after.TotalAlloc - before.TotalAlloc
	if grew > a.bytes {
		a.bytes, a.call = grew, what
	}
	if grew > corpusMemBound*raceFactor {
		a.over = append(a.over, fmt.Sprintf("%s allocated %d MiB, more than %d MiB", what, grew>>20, corpusMemBound*raceFactor>>20))
	}
}

// corpusRun calls every public reader and tool on one tree and returns
// how many library calls and tool runs it made, and what the hungriest
// call allocated. Errors are expected; only panics, hangs and memory
// count.
func corpusRun(tr corpusTree) (calls, tools int, alloc corpusAlloc) {
	call := func(f func()) {
		calls++
		_, file, line, _ := runtime.Caller(1)
		alloc.measure(fmt.Sprintf("the call at %s:%d", filepath.Base(file), line), f)
	}
	fsys, err := sysfs.New(tr.sysfs)
	calls++
	if err == nil {
		var names []string
		call(func() { names, _ = fsys.CANames() })
		call(func() { fsys.CharDevs() })
		call(func() { fsys.VerbsABIVersion() })
		call(func() { fsys.MadABIVersion() })
		call(func() { fsys.CAs() })
		call(func() { fsys.CA(strings.Repeat("x", 5000)) })
		for _, name := range append(names, "rxe9", "") {
			var ca *sysfs.CA
			call(func() { ca, _ = fsys.CA(name) })
			call(func() { fsys.Port(name, 1) })
			call(func() { fsys.Port(name, -1) })
			if ca == nil {
				continue
			}
			call(func() { ca.HwCounters() })
			for i, p := range ca.Ports {
				if i >= 4 {
					break // the 10,000-port tree: CA read them all already
				}
				call(func() { p.GID(0) })
				call(func() { p.GIDs() })
				call(func() { p.Counters() })
				call(func() { p.HwCounters() })
				call(func() {
					if s, err := p.OpenHwCounters(); err == nil {
						s.Read(map[string]uint64{})
						s.Close()
					}
				})
			}
		}
	}
	h := &umad.Host{Sysfs: fsys, DevDir: tr.devDir}
	call(func() { h.Init() })
	call(func() { h.CANames() })
	variant := func(f func()) {
		if !tr.big {
			calls++
			_, file, line, _ := runtime.Caller(1)
			alloc.measure(fmt.Sprintf("the call at %s:%d", filepath.Base(file), line), f)
		}
	}
	variant(func() { h.LookupCA("") })
	call(func() { h.LookupCA("rxe0") })
	call(func() { h.LookupCA(strings.Repeat("x", 5000)) })
	variant(func() { h.LookupPort("", 0) })
	call(func() { h.LookupPort("rxe0", 1) })
	variant(func() { h.LookupPort("", 2) })
	call(func() { h.CAPortGUIDs("rxe0") })
	call(func() {
		if p, err := h.OpenPort("rxe0", 1); err == nil {
			p.Close()
		}
	})
	tree := fsys // never the host's /sys: sysfs.New fails only without the tree
	if tree == nil {
		tree = sysfs.NewFS(os.DirFS(tr.sysfs))
	}
	uo := &uverbs.Options{Sysfs: tree, DevDir: tr.devDir, Generic: true}
	call(func() { uverbs.Devices(uo) })
	call(func() { uverbs.LookupDevice("rxe0", uo) })
	co := &counters.Options{Sysfs: tree, NoNetlink: true}
	for _, name := range []string{"rxe0", "rxe1"} {
		call(func() {
			sets, _ := counters.DescribeWith(name, co)
			for _, s := range sets {
				s.Read(make([]uint64, len(s.Names)))
				s.Close()
			}
		})
	}

	e := defaultEnv()
	e.diags = &diags.Env{SysfsRoot: tr.sysfs, DevDir: tr.devDir}
	e.verbs = &verbs.Env{Uverbs: uo, Counters: co}
	reg := registry(e)
	for _, args := range [][]string{
		// Every tool that reads sysfs, once each: their other forms
		// (--json, -s, -l, one port) read the same files.
		{"ibstat"}, {"ibstat", "-p"}, {"ibstatus"}, {"ibstatus", "rxe0:1"},
		{"perfquery", "-C", "rxe0", "-P", "1"},
		{"devices"}, {"devinfo", "-v"},
		{"counters", "-d", "rxe0"},
		{"umad", "send", "-C", "rxe0", "-P", "1", "-t", "1", "--retries", "0"},
	} {
		if tr.big && (len(args) > 1 && (args[1] == "-p" || args[1] == "rxe0:1")) {
			continue // variants
		}
		tools++
		var out bytes.Buffer
		alloc.measure(strings.Join(args, " "), func() {
			runIn(reg, append([]string{"purerdma"}, args...), &limitWriter{w: &out, n: 1 << 20}, io.Discard)
		})
	}
	return calls, tools, alloc
}

// limitWriter keeps at most n bytes: a tool printing a whole 2 GiB file
// shows up as memory, not as a full disk or buffer.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n <= 0 {
		return len(p), nil
	}
	q := p[:min(len(p), l.n)]
	l.n -= len(q)
	l.w.Write(q)
	return len(p), nil
}

// write writes a new file at p: a file already there is removed first,
// since the trees hard-link the base tree's files (link).
func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyResolved copies the tree src to dst, following symbolic links (the
// fixtures link class/ entries to devices/, as sysfs does).
func copyResolved(t *testing.T, src, dst string) {
	t.Helper()
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		write(t, dst, string(b))
		return
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "devices" && filepath.Base(src) != "class" && fileExists(filepath.Join(src, "class")) {
			continue // reached through class/'s links
		}
		copyResolved(t, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// link makes dst a copy of the tree src whose files are hard links to
// src's: one system call per file. A tree's mutations replace files
// (replace, write), never write into them.
func link(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		return os.Link(p, filepath.Join(dst, rel))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// cp copies a tree of plain files and directories.
func cp(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
