package perf

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// The report's fixed lines (perftest_parameters.h).
const (
	resultLine      = "---------------------------------------------------------------------------------------\n"
	resultFmt       = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
	resultFmtG      = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
	resultFmtLatDur = " #bytes        #iterations       t_avg[usec]    tps average"
	resultFmtLat    = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
)

// cHex is C's printf "%#0Nx": "0x" and the digits, zero-padded to width
// in all; the value 0 gets no prefix.
func cHex(v uint64, width int) string {
	if v == 0 {
		return fmt.Sprintf("%0*x", width, 0)
	}
	return fmt.Sprintf("0x%0*x", max(width-2, 0), v)
}

// printTestInfo is ctx_print_test_info.
func (p *params) printTestInfo(w io.Writer, devName string, pcir bool) {
	if p.output != outFull {
		return
	}
	var b strings.Builder
	b.WriteString(resultLine)
	b.WriteString("                    ")
	fmt.Fprintf(&b, "%s ", testsStr[p.verb])
	if p.verb == verbAtomic {
		fmt.Fprintf(&b, "%s ", atomicTypesStr[p.atomicType])
	}
	if p.tst == testBW {
		b.WriteString("BW ")
	} else {
		b.WriteString("Latency ")
	}
	b.WriteString("Test\n")
	if p.events {
		fmt.Fprintf(&b, " Test with events. Using %s_comp%d\n", devName, 0)
	}
	fmt.Fprintf(&b, " Dual-port       : %s\t\tDevice         : %s\n", "OFF", devName)
	fmt.Fprintf(&b, " Number of qps   : %d\t\tTransport type : %s\n", p.numQPs, "IB")
	srq := "OFF"
	if p.useSRQ {
		srq = "ON"
	}
	fmt.Fprintf(&b, " Connection type : %s\t\tUsing SRQ      : %s\n", connStr[p.conn], srq)
	ro := "ON"
	if !pcir {
		ro = "OFF"
	}
	fmt.Fprintf(&b, " PCIe relax order: %s\n", ro)
	fmt.Fprintf(&b, " ibv_wr* API     : %s\n", "OFF")
	if p.server != "" {
		fmt.Fprintf(&b, " TX depth        : %d\n", p.txDepth)
	}
	if p.verb == verbSend && p.server == "" {
		fmt.Fprintf(&b, " RX depth        : %d\n", p.rxDepth)
	}
	if p.tst == testBW {
		fmt.Fprintf(&b, " CQ Moderation   : %d\n", p.cqMod)
	}
	fmt.Fprintf(&b, " Mtu             : %d[B]\n", 128<<p.currMTU)
	link := "IB"
	if p.linkEthernet {
		link = "Ethernet"
	}
	fmt.Fprintf(&b, " Link type       : %s\n", link)
	if p.gidIndex != -1 {
		fmt.Fprintf(&b, " GID index       : %d\n", p.gidIndex)
	}
	if p.verb != verbRead && p.verb != verbAtomic {
		fmt.Fprintf(&b, " Max inline data : %d[B]\n", p.inline)
	} else {
		fmt.Fprintf(&b, " Outstand reads  : %d\n", p.outReads)
	}
	if p.workRDMACM {
		fmt.Fprintf(&b, " rdma_cm QPs\t : %s\n", "ON")
		fmt.Fprintf(&b, " Data ex. method : %s", "rdma_cm")
		if p.server == "" {
			b.WriteString("\n" + resultLine)
			b.WriteString(" Waiting for client rdma_cm QP to connect\n")
			b.WriteString(" Please run the same command with the IB/RoCE interface IP")
		}
	} else {
		fmt.Fprintf(&b, " rdma_cm QPs\t : %s\n", "OFF")
		fmt.Fprintf(&b, " Data ex. method : %s", "Ethernet")
	}
	b.WriteString("\n")
	b.WriteString(resultLine)
	io.WriteString(w, b.String())
}

// printDest is ctx_print_pingpong_data.
func (p *params) printDest(w io.Writer, d *dest, remote bool) {
	if p.output != outFull {
		return
	}
	side := "local"
	if remote {
		side = "remote"
	}
	var b strings.Builder
	fmt.Fprintf(&b, " %s address: LID %s QPN %s PSN %s", side, cHex(uint64(d.lid), 4), cHex(uint64(d.qpn), 6), cHex(uint64(d.psn), 6))
	// In the rdma_cm modes the exchange's own parameters print these
	// lines, with their verb, SEND.
	if p.verb == verbRead && !p.workRDMACM {
		fmt.Fprintf(&b, " OUT %s", cHex(uint64(d.outReads), 4))
	}
	if (p.verb == verbRead || p.verb == verbWrite) && !p.workRDMACM {
		fmt.Fprintf(&b, " RKey %s VAddr %s", cHex(uint64(d.rkey), 8), cHex(d.vaddr, 16))
	}
	b.WriteString("\n")
	if p.gidIndex > -1 {
		b.WriteString(" GID: ")
		for i, g := range d.gid {
			if i > 0 {
				b.WriteString(":")
			}
			fmt.Fprintf(&b, "%02d", g)
		}
		b.WriteString("\n")
	}
	io.WriteString(w, b.String())
}

// printResultHeader is the RESULT_LINE and column header each main prints
// before the run.
func (p *params) printResultHeader(w io.Writer) {
	if p.output != outFull {
		return
	}
	if p.tst == testBW {
		h := resultFmt
		if p.reportGbs {
			h = resultFmtG
		}
		io.WriteString(w, resultLine+h+"\n")
		return
	}
	if p.duration > 0 {
		io.WriteString(w, resultLine+resultFmtLatDur+"\n")
		return
	}
	io.WriteString(w, resultLine+resultFmtLat+"\n")
}

// cyclesPerUsec is what the reports divide the clock's ticks by: the
// clock here counts nanoseconds, so a microsecond is 1000 of them (where
// perftest's cycle counter runs at get_cpu_mhz() ticks a microsecond).
const cyclesPerUsec = 1000

// bwReportOf is print_report_bw's arithmetic: the average over the whole
// run and, unless noPeak, the best rate of any run of completions.
func (p *params) bwReportOf(tposted, tcompleted []int64) bwReport {
	n := int(p.iters) * p.numQPs
	if p.duration > 0 {
		n = int(p.iters) // what completed in the sample, on every QP
	}
	cycles := float64(cyclesPerUsec) * 1e6
	fmtFactor := float64(0x100000)
	if p.reportGbs {
		fmtFactor = 125000000
	}
	optDelta := tcompleted[0] - tposted[0]
	if !p.noPeak {
		for i := 0; i < n; i++ {
			for j := roundUp(i+1, p.cqMod) - 1; j < n; j += p.cqMod {
				if t := (tcompleted[j] - tposted[i]) / int64(j-i+1); t < optDelta {
					optDelta = t
				}
			}
			if n%p.cqMod != 0 {
				j := n - 1
				if t := (tcompleted[j] - tposted[i]) / int64(j-i+1); t < optDelta {
					optDelta = t
				}
			}
		}
	}
	loc := n - 1
	if p.noPeak {
		loc = 0
	}
	sum := float64(tcompleted[loc] - tposted[0])
	r := bwReport{size: p.size, iters: uint64(n)}
	r.bwAvg = float64(p.size) * float64(n) * cycles / (sum * fmtFactor)
	r.msgRate = float64(n) * cycles / (sum * 1e6)
	if !p.noPeak {
		peakUp := p.size * uint64(cycles)
		peakDown := uint64(optDelta) * uint64(fmtFactor)
		r.bwPeak = float64(peakUp) / float64(peakDown)
	}
	return r
}

// cInt is C's conversion of a double to int on x86-64: truncation, and
// INT_MIN for what does not fit (cvttsd2si's "integer indefinite").
func cInt(f float64) int32 {
	if f != f || f >= 2147483648 || f <= -2147483649 {
		return -2147483648
	}
	return int32(f)
}

func roundUp(v, a int) int {
	if v%a == 0 {
		return v
	}
	return a * (v/a + 1)
}

// printBW is print_full_bw_report without a remote report.
func (p *params) printBW(w io.Writer, r bwReport) {
	switch p.output {
	case outBW:
		fmt.Fprintf(w, "%f\n", r.bwAvg)
		return
	case outMR:
		fmt.Fprintf(w, "%f\n", r.msgRate)
		return
	}
	if p.reportGbs && r.bwAvg < 0.1 {
		fmt.Fprintf(w, " %-7d    %d           %-7.6f            %-7.6f            %-7.6f", r.size, r.iters, r.bwPeak, r.bwAvg, r.msgRate)
	} else {
		fmt.Fprintf(w, " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f", r.size, r.iters, r.bwPeak, r.bwAvg, r.msgRate)
	}
	io.WriteString(w, "\n")
}

// printLat is print_report_lat for an iterations run: the differences of
// successive post times, the two largest left out, their median, mean,
// standard deviation (of differences truncated to whole microseconds, as
// perftest computes it) and percentiles.
func (p *params) printLat(w io.Writer, tposted []int64) {
	mc := int(p.iters) - 1
	rtt := 2.0
	if p.verb == verbRead || p.verb == verbAtomic {
		rtt = 1
	}
	delta := make([]int64, mc)
	for i := range delta {
		delta[i] = tposted[i+1] - tposted[i]
	}
	q := float64(cyclesPerUsec) * rtt
	sort.Slice(delta, func(i, j int) bool { return delta[i] < delta[j] })
	mc -= 2
	var median int64
	if (mc-1)%2 != 0 {
		median = (delta[mc/2] + delta[mc/2-1]) / 2
	} else {
		median = delta[mc/2]
	}
	var avgSum float64
	for i := 0; i < mc; i++ {
		avgSum += float64(delta[i]) / q
	}
	avg := avgSum / float64(mc)
	var stdevSum float64
	for i := 0; i < mc; i++ {
		// int temp_var = average - delta/q; int pow_var = pow(temp_var, 2):
		// the square past INT_MAX converts, on x86-64, to INT_MIN
		// (cvttsd2si), and the sum can go negative: perftest then prints
		// sqrt's -nan. Latencies over 46 ms do it (seen under TCG).
		tv := cInt(avg - float64(delta[i])/q)
		stdevSum += float64(cInt(float64(tv) * float64(tv)))
	}
	lat := float64(median) / q
	stdev := math.Sqrt(stdevSum / float64(mc))
	i99 := int(math.Ceil(float64(mc) * 0.99))
	i999 := int(math.Ceil(float64(mc) * 0.999))
	if p.output == outLat {
		fmt.Fprintf(w, "%f\n", avg)
		return
	}
	sd := fmt.Sprintf("%-7.2f", stdev)
	if math.IsNaN(stdev) {
		sd = fmt.Sprintf("%-7s", "-nan") // glibc's printf of sqrt's negative NaN
	}
	fmt.Fprintf(w, " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%s\t\t%-7.2f \t\t%-7.2f",
		p.size, p.iters, float64(delta[0])/q, float64(delta[mc])/q, lat, avg, sd, float64(delta[i99])/q, float64(delta[i999])/q)
	io.WriteString(w, "\n")
}

// cpuMHzWarning is proc_get_cpu_mhz's warning, which get_cpu_mhz prints on
// stderr, unless -F, each time it is called: when a "cpu MHz" line of
// /proc/cpuinfo differs from the first by more than 2 %. The frequency
// itself is not needed here (the clock counts nanoseconds).
func (p *params) cpuMHzWarning(stderr io.Writer) {
	if p.cpuFreqF {
		return
	}
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return
	}
	defer f.Close()
	s := bufio.NewScanner(io.LimitReader(f, 1<<20))
	mhz := 0.0
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, "cpu MHz") {
			continue
		}
		i := strings.IndexByte(line, ':')
		if i < 0 {
			continue
		}
		m, err := strconv.ParseFloat(strings.TrimSpace(line[i+1:]), 64)
		if err != nil {
			continue
		}
		if mhz == 0 {
			mhz = m
			continue
		}
		if math.Abs(mhz-m)/mhz > 0.02 {
			fmt.Fprintf(stderr, "Conflicting CPU frequency values detected: %f != %f. CPU Frequency is not max.\n", mhz, m)
			return
		}
	}
}
