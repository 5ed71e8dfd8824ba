// Command report turns the insnmark plugin's samples into make bench's
// instruction tables: per operation (cops against goops), per tool (each C
// tool against its purerdma twin, less the start-up of /bin/true and of a
// minimal Go program) and per rc_pingpong iteration. With -prof it maps a
// profile (the plugin's prof= file) onto the functions of a Go binary.
//
//	report [-n1 100 -n2 2000] [-readers 4 -r1 100 -r2 1000] SAMPLES
//	report -prof PROFILE -bin BINARY [-top 40]
package main

import (
	"bufio"
	"debug/elf"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// drop is how many samples of each operation are left out: the first runs
// fault pages in and fill caches that later runs find full.
const drop = 5

type sample struct{ user, kern uint64 }

func (s sample) total() uint64 { return s.user + s.kern }

// samples read from the plugin's output: per-CPU windows by code, global
// windows by code (user and kernel summed over the CPUs).
type samples struct {
	op     map[int][]sample
	global map[int][]sample
	// globalCPU keeps the global windows per CPU, for rc_pingpong's
	// client CPU.
	globalCPU map[int][][]sample
}

func parse(r io.Reader) (*samples, error) {
	s := &samples{op: map[int][]sample{}, global: map[int][]sample{}, globalCPU: map[int][][]sample{}}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		code, err := strconv.Atoi(f[0])
		if err != nil || len(f) < 4 {
			return nil, fmt.Errorf("line %d: %q", line, sc.Text())
		}
		nums := make([]uint64, 0, len(f)-2)
		for _, x := range f[2:] {
			v, err := strconv.ParseUint(x, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", line, err)
			}
			nums = append(nums, v)
		}
		if f[1] != "G" {
			s.op[code] = append(s.op[code], sample{nums[0], nums[1]})
			continue
		}
		var sum sample
		var per []sample
		for i := 0; i+1 < len(nums); i += 2 {
			sum.user += nums[i]
			sum.kern += nums[i+1]
			per = append(per, sample{nums[i], nums[i+1]})
		}
		s.global[code] = append(s.global[code], sum)
		s.globalCPU[code] = append(s.globalCPU[code], per)
	}
	return s, sc.Err()
}

// minOf returns the smallest user, kernel and total counts of xs (each on
// its own) and the spread of the totals, (max - min) / min.
func minOf(xs []sample) (m sample, tot uint64, spread float64) {
	if len(xs) == 0 {
		return
	}
	m, tot = xs[0], xs[0].total()
	hi := tot
	for _, x := range xs[1:] {
		m.user, m.kern = min(m.user, x.user), min(m.kern, x.kern)
		tot, hi = min(tot, x.total()), max(hi, x.total())
	}
	if tot > 0 {
		spread = float64(hi-tot) / float64(tot)
	}
	return
}

func trim(xs []sample) []sample {
	if len(xs) > 2*drop {
		return xs[drop:]
	}
	return xs
}

func ratio(a, b uint64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

// ops are the operations by cops's code; goops records the same
// operation as 64 + the code.
var ops = []struct {
	code int
	name string
}{
	{1, "open + close device"},
	{2, "QueryPort"},
	{3, "QueryGIDTable"},
	{4, "PD alloc + dealloc (Into)"},
	{5, "PD alloc + dealloc (plain)"},
	{6, "CQ create + destroy (Into)"},
	{7, "CQ create + destroy (plain)"},
	{8, "QP create + destroy (Into)"},
	{9, "QP create + destroy (plain)"},
	{10, "modify QP RESET to RTS (3 calls)"},
	{11, "reg MR 4 KiB + dereg"},
	{12, "PostSend (RDMA WRITE 64 B)"},
	{13, "Poll (one completion)"},
	{14, "counters Read (mock0)"},
	{15, "MAD send (umad)"},
	{16, "MAD receive (umad)"},
	{17, "mlx5 PostSend (RDMA WRITE 64 B, mock0)"},
	{18, "mlx5 Poll (one completion, mock0)"},
}

var tools = []string{"ibv_devices | devices", "ibv_devinfo | devinfo", "ibv_devinfo -v | devinfo -v",
	"ibstat | ibstat", "ibstatus | ibstatus", "perfquery | perfquery", "rdma link | link",
	"rdma statistic show | statistic show", "rdma resource | resource",
	"pqroce (perfquery's work on RoCE) | perfquery"}

func perOp(w io.Writer, s *samples) {
	fmt.Fprintf(w, "per operation: instructions, the least of the samples after the first %d (spread: (max-min)/min of the totals)\n", drop)
	fmt.Fprintf(w, "%-34s %8s %8s %8s %8s | %6s %6s %6s | %s\n", "operation", "C user", "C kern", "Go user", "Go kern", "user", "kern", "total", "n C/Go, spread C/Go")
	for _, o := range ops {
		cs, gs := trim(s.op[o.code]), trim(s.op[64+o.code])
		if len(cs) == 0 && len(gs) == 0 {
			continue
		}
		c, ct, csp := minOf(cs)
		g, gt, gsp := minOf(gs)
		fmt.Fprintf(w, "%-34s %8d %8d %8d %8d | %6s %6s %6s | %d/%d, %.1f%%/%.1f%%\n", o.name, c.user, c.kern, g.user, g.kern,
			ratio(g.user, c.user), ratio(g.kern, c.kern), ratio(gt, ct), len(cs), len(gs), 100*csp, 100*gsp)
	}
}

// cpu1 returns the samples of a global window on CPU 1, where guest.sh
// pins the tools: what the scheduler runs on the other CPU meanwhile is
// not theirs.
func cpu1(s *samples, code int) []sample {
	var out []sample
	for _, per := range s.globalCPU[code] {
		if len(per) > 1 {
			out = append(out, per[1])
		}
	}
	return out
}

func perTool(w io.Writer, s *samples) {
	// run returns the trimmed mean and the least of code's runs on CPU
	// 1: the mean of the runs left when the tenth above and the tenth
	// below are set aside. Not the mean: a run that an interrupt or a
	// kernel thread lengthened (one of 41 pqroce runs on 6.1 took 4.9 M
	// against 2.9 M) moved it by 1.7 %. Not the median, which moved by
	// up to 1 % of a Go tool's work on 6.12, where the runs spread evenly
	// over 3 %; the trimmed mean moved under 0.7 % in two benches. (The Go
	// runs fell in two groups 4 % apart there, until guest.sh turned the
	// scheduler's wakeup preemption off for the tool rows: its wakeups.)
	run := func(code int) (mean, least uint64, ok bool) {
		xs := cpu1(s, code)
		if len(xs) == 0 {
			return 0, 0, false
		}
		_, least, _ = minOf(xs)
		return trimmedMean(xs), least, true
	}
	tru, truLeast, ok1 := run(2)
	mini, miniLeast, ok2 := run(3)
	if !ok1 || !ok2 {
		return
	}
	fmt.Fprintf(w, "\nper tool: instructions of a whole run on CPU 1 (fork to exit, the tool pinned there), the mean of %d runs but the highest and lowest tenth (start-ups: of %d); the last column from the least\n", len(cpu1(s, 4)), len(cpu1(s, 2)))
	fmt.Fprintf(w, "start-up: /bin/true %d, a minimal Go program %d (least %d, %d); work = run - start-up\n", tru, mini, truLeast, miniLeast)
	fmt.Fprintf(w, "%-40s %10s %10s | %10s %10s | %9s | %s\n", "C tool | purerdma", "C run", "Go run", "C work", "Go work", "Go/C work", "least")
	ratio := func(c, g, cStart, gStart uint64) string {
		cw, gw := int64(c)-int64(cStart), int64(g)-int64(gStart)
		if cw <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", float64(gw)/float64(cw))
	}
	for k, name := range tools {
		c, cLeast, ok1 := run(2*(k+1) + 2)
		g, gLeast, ok2 := run(2*(k+1) + 3)
		if !ok1 || !ok2 {
			continue
		}
		cw, gw := int64(c)-int64(tru), int64(g)-int64(mini)
		fmt.Fprintf(w, "%-40s %10d %10d | %10d %10d | %9s | %s\n", name, c, g, cw, gw, ratio(c, g, tru, mini), ratio(cLeast, gLeast, truLeast, miniLeast))
	}
}

// trimmedMean returns the mean of xs's totals, rounded down, less the
// highest and the lowest len(xs)/10 of them; xs is not empty.
func trimmedMean(xs []sample) uint64 {
	t := make([]uint64, len(xs))
	for i, x := range xs {
		t[i] = x.total()
	}
	slices.Sort(t)
	k := len(t) / 10
	var sum uint64
	for _, v := range t[k : len(t)-k] {
		sum += v
	}
	return sum / uint64(len(t)-2*k)
}

// leastGlobal returns the least of code's global windows on cpu, or
// summed over the CPUs when cpu < 0.
func leastGlobal(s *samples, code, cpu int) (sample, bool) {
	var xs []sample
	for _, per := range s.globalCPU[code] {
		if cpu < 0 {
			var sum sample
			for _, x := range per {
				sum.user, sum.kern = sum.user+x.user, sum.kern+x.kern
			}
			xs = append(xs, sum)
		} else if cpu < len(per) {
			xs = append(xs, per[cpu])
		}
	}
	m, _, _ := minOf(xs)
	return m, len(xs) > 0
}

// unit returns one unit of work of two global windows that differ only in
// how many units they do: (least of b - least of a) / units, on cpu (or
// all CPUs, cpu < 0). The start-up and tear-down both windows have cancel.
func unit(s *samples, a, b, cpu, units int) (sample, bool) {
	x, ok1 := leastGlobal(s, a, cpu)
	y, ok2 := leastGlobal(s, b, cpu)
	per := func(p, q uint64) uint64 { return uint64(max(int64(q)-int64(p), 0)) / uint64(units) }
	return sample{per(x.user, y.user), per(x.kern, y.kern)}, ok1 && ok2
}

func perMessage(w io.Writer, s *samples, n1, n2 int) {
	// One iteration is the difference of the least N2 run and the least
	// N1 run, on the client's CPU (1) and on both, divided by N2 - N1.
	iter := func(a, b int) (client, all sample, ok bool) {
		client, ok = unit(s, a, b, 1, n2-n1)
		all, _ = unit(s, a, b, -1, n2-n1)
		return client, all, ok
	}
	cc, ca, ok1 := iter(100, 101)
	gc, ga, ok2 := iter(102, 103)
	if !ok1 || !ok2 {
		return
	}
	fmt.Fprintf(w, "\nper message: rc_pingpong -e, 64 B, one iteration = (least run of %d - least run of %d) / %d\n", n2, n1, n2-n1)
	fmt.Fprintf(w, "%-24s %8s %8s %8s | %8s %8s %8s\n", "", "C user", "C kern", "C total", "Go user", "Go kern", "Go total")
	fmt.Fprintf(w, "%-24s %8d %8d %8d | %8d %8d %8d | Go/C %s\n", "client (CPU 1)", cc.user, cc.kern, cc.total(),
		gc.user, gc.kern, gc.total(), ratio(gc.total(), cc.total()))
	fmt.Fprintf(w, "%-24s %8d %8d %8d | %8d %8d %8d | Go/C %s\n", "both CPUs (C server)", ca.user, ca.kern, ca.total(),
		ga.user, ga.kern, ga.total(), ratio(ga.total(), ca.total()))
}

// perPerftest prints one message of each perftest _bw client, on the
// client's CPU (1): guest.sh's pt runs, codes 120+2k and 121+2k (perftest's
// C client, pt1 and pt2 iterations) and 130+2k, 131+2k (ours), k = send,
// write, read, atomic.
func perPerftest(w io.Writer, s *samples, pt1, pt2 int) {
	header := false
	for k, name := range []string{"ib_send_bw -e, 64 B", "ib_write_bw (busy-polls), 64 B", "ib_read_bw -e, 64 B", "ib_atomic_bw -e, 8 B"} {
		c, ok1 := unit(s, 120+2*k, 121+2*k, 1, pt2-pt1)
		g, ok2 := unit(s, 130+2*k, 131+2*k, 1, pt2-pt1)
		if !ok1 || !ok2 {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\nper message: perftest _bw clients (CPU 1; C server on CPU 0), one message = (least run of %d - least run of %d) / %d\n", pt2, pt1, pt2-pt1)
			fmt.Fprintf(w, "%-32s %8s %8s %8s | %8s %8s %8s\n", "", "C user", "C kern", "C total", "Go user", "Go kern", "Go total")
			header = true
		}
		fmt.Fprintf(w, "%-32s %8d %8d %8d | %8d %8d %8d | Go/C %s\n", name, c.user, c.kern, c.total(),
			g.user, g.kern, g.total(), ratio(g.total(), c.total()))
	}
}

// perRead prints one counters read of readers threads (C) or goroutines
// (Go) reading one object at once, counted on every CPU: guest.sh's cops
// rate and goops rate runs, r1 and r2 reads per reader (codes 110-113).
func perRead(w io.Writer, s *samples, readers, r1, r2 int) {
	units := readers * (r2 - r1)
	c, ok1 := unit(s, 110, 111, -1, units)
	g, ok2 := unit(s, 112, 113, -1, units)
	if !ok1 || !ok2 {
		return
	}
	fmt.Fprintf(w, "\nconcurrent reads: %d readers of one counters object on mock0, one read = (least run of %d each - least run of %d each) / %d, all CPUs\n",
		readers, r2, r1, units)
	fmt.Fprintf(w, "%-24s %8s %8s %8s | %8s %8s %8s\n", "", "C user", "C kern", "C total", "Go user", "Go kern", "Go total")
	fmt.Fprintf(w, "%-24s %8d %8d %8d | %8d %8d %8d | Go/C %s\n", "counters Read", c.user, c.kern, c.total(),
		g.user, g.kern, g.total(), ratio(g.total(), c.total()))
}

// binarySymbols returns the functions of an ELF binary, by address.
func binarySymbols(bin string) ([]elf.Symbol, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, err
	}
	fns := syms[:0]
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			fns = append(fns, s)
		}
	}
	sort.Slice(fns, func(i, j int) bool { return fns[i].Value < fns[j].Value })
	return fns, nil
}

// kernelSymbols returns the text symbols of a copy of the guest's
// /proc/kallsyms (taken in the boot the profile comes from: the kernel's
// addresses move from boot to boot), by address; each ends where the
// next begins.
func kernelSymbols(path string) ([]elf.Symbol, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var fns []elf.Symbol
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var addr uint64
		var typ, name string
		if n, _ := fmt.Sscanf(sc.Text(), "%x %s %s", &addr, &typ, &name); n == 3 && strings.ContainsAny(typ, "tTwW") {
			fns = append(fns, elf.Symbol{Name: name, Value: addr})
		}
	}
	sort.Slice(fns, func(i, j int) bool { return fns[i].Value < fns[j].Value })
	return fns, sc.Err()
}

// profile prints the functions fns that the profile's instructions fall
// in, most first.
func profile(w io.Writer, prof string, fns []elf.Symbol, top int) error {
	pf, err := os.Open(prof)
	if err != nil {
		return err
	}
	defer pf.Close()
	by := map[string]uint64{}
	var total uint64
	sc := bufio.NewScanner(pf)
	for sc.Scan() {
		var addr, n uint64
		if _, err := fmt.Sscanf(sc.Text(), "%x %d", &addr, &n); err != nil {
			continue
		}
		i := sort.Search(len(fns), func(i int) bool { return fns[i].Value > addr }) - 1
		name := "?"
		if i >= 0 && (fns[i].Size == 0 || addr < fns[i].Value+fns[i].Size) {
			name = fns[i].Name
		}
		by[name] += n
		total += n
	}
	type kv struct {
		k string
		v uint64
	}
	var list []kv
	for k, v := range by {
		list = append(list, kv{k, v})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v })
	fmt.Fprintf(w, "instructions in the profile: %d\n", total)
	for i, e := range list {
		if i == top {
			break
		}
		fmt.Fprintf(w, "%12d %5.1f%%  %s\n", e.v, 100*float64(e.v)/float64(max(total, 1)), e.k)
	}
	return sc.Err()
}

func main() {
	n1 := flag.Int("n1", 100, "rc_pingpong iterations of the short runs")
	n2 := flag.Int("n2", 2000, "rc_pingpong iterations of the long runs")
	readers := flag.Int("readers", 4, "counters readers at once (guest.sh's RD)")
	r1 := flag.Int("r1", 100, "reads per reader of the short concurrent runs")
	r2 := flag.Int("r2", 1000, "reads per reader of the long concurrent runs")
	pt1 := flag.Int("pt1", 200, "perftest iterations of the short runs (guest.sh's PT1)")
	pt2 := flag.Int("pt2", 2000, "perftest iterations of the long runs (guest.sh's PT2)")
	prof := flag.String("prof", "", "a profile the plugin wrote (prof=, or kprof= with -kallsyms)")
	bin := flag.String("bin", "", "the binary the user-space profile ran")
	kallsyms := flag.String("kallsyms", "", "for a kernel profile: the guest's /proc/kallsyms, of the same boot")
	top := flag.Int("top", 40, "functions to list")
	flag.Parse()
	if *prof != "" {
		var fns []elf.Symbol
		var err error
		if *kallsyms != "" {
			fns, err = kernelSymbols(*kallsyms)
		} else {
			fns, err = binarySymbols(*bin)
		}
		if err == nil {
			err = profile(os.Stdout, *prof, fns, *top)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "report:", err)
			os.Exit(1)
		}
		return
	}
	if flag.NArg() != 1 || *n2 <= *n1 {
		fmt.Fprintln(os.Stderr, "usage: report [-n1 N -n2 M] SAMPLES | report -prof PROFILE -bin BINARY | report -prof KPROFILE -kallsyms FILE")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	defer f.Close()
	s, err := parse(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	perOp(os.Stdout, s)
	perTool(os.Stdout, s)
	perMessage(os.Stdout, s, *n1, *n2)
	perRead(os.Stdout, s, *readers, *r1, *r2)
	perPerftest(os.Stdout, s, *pt1, *pt2)
}
