package exporter

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/purerdma/rdma/sysfs"
)

// devices is what the exporter keeps of the host's RDMA devices between
// scrapes: the devices and ports it discovered, their counter sets
// (sysfs.CounterSet, sysfs.HwCounterSet, sysfs.PortStatusReader, opened
// under one sysfs.FileLimit, so that the descriptors held stay bounded
// whatever the number of devices) and every series' label pairs, made
// once. It is discovered again only when class/infiniband's entries
// change (sysfs.CAWatch) or listing them failed.
//
// Discovery reads only what the series need: the device names and each
// device's port numbers. A file that cannot be read costs only its own
// series: a bad state file the state series, a bad counter file that
// counter's, a port whose counters/ cannot be opened that port's PMA
// series. Each loss is counted, per device and source, in
// rdma_exporter_read_errors, and sets the source's
// rdma_exporter_source_up to 0.
type devices struct {
	watch *sysfs.CAWatch
	stale bool  // discover again on the next scrape
	err   error // listing the devices failed: reported while it holds
	cas   []*devState
}

// Indexes of the sysfs sources in devState.failed.
const (
	srcIB = iota
	srcHw
	srcNetlink
	numDevSources
)

var devSourceNames = [numDevSources]string{srcIB: SourceInfiniBand, srcHw: SourceHwCounters, srcNetlink: SourceNetlink}

type devState struct {
	name string
	// portsErr: the device's ports could not be listed; it exports only
	// its info series.
	portsErr error
	ports    []*portState

	hw *hwSet // device-wide hw_counters/ (hfi1), nil when absent

	// failed counts, per source, the reads of this scrape that failed.
	failed [numDevSources]int
	// errLabels are the label pairs of rdma_exporter_read_errors.
	errLabels [numDevSources][]*dto.LabelPair
}

type portState struct {
	num    int
	labels []*dto.LabelPair // device, port

	status    *sysfs.PortStatusReader
	statusErr error

	pma *pmaSet // counters/
	ext *pmaSet // counters_ext/ (kernels before 4.5)
	hw  *hwSet  // hw_counters/
	// hwDir: the port has hw_counters/ (so a lifespan to read).
	hwDir bool
}

// pmaSet is the files of a port's counters/ or counters_ext/ that
// node_exporter exports, with its descriptor for each.
type pmaSet struct {
	set    *sysfs.CounterSet
	err    error // opening failed (not ErrNotSupported): the port is opened again next scrape
	vals   []uint64
	ok     []bool
	descs  []*prometheus.Desc
	octets []bool
}

// hwSet is a hw_counters/ directory: node_exporter's descriptor for each
// file it names (nil otherwise), and the label pairs of rdma_hw_stat_total.
type hwSet struct {
	set    *sysfs.HwCounterSet
	err    error
	vals   []uint64
	ok     []bool
	descs  []*prometheus.Desc
	labels [][]*dto.LabelPair
}

// refresh discovers the devices again when they changed; the error is the
// listing's, reported on every scrape until a listing succeeds.
func (d *devices) refresh(fs *sysfs.FS) error {
	if d.watch == nil {
		d.watch = fs.WatchCAs()
	}
	changed, werr := d.watch.Changed()
	if !changed && !d.stale {
		return d.err
	}
	d.close()
	d.stale = werr != nil
	names, err := fs.CANames()
	if isNotExist(err) {
		d.err = nil // no RDMA stack (no class/infiniband): no devices, not a failure
		return nil
	}
	d.err = err
	if err != nil {
		d.stale = true
		return err
	}
	for _, name := range names {
		ds := &devState{name: name}
		for i := range ds.errLabels {
			ds.errLabels[i] = prometheus.MakeLabelPairs(descReadErrors(), []string{devSourceNames[i], name})
		}
		nums, err := fs.PortNumbers(name)
		if err != nil {
			ds.portsErr = err
		}
		for _, n := range nums {
			ds.ports = append(ds.ports, openPort(fs, name, n))
		}
		if s, err := fs.OpenCAHwCounters(name); !errors.Is(err, sysfs.ErrNotSupported) {
			ds.hw = newHwSet(s, err, name, "")
		}
		d.cas = append(d.cas, ds)
	}
	return nil
}

func openPort(fs *sysfs.FS, ca string, n int) *portState {
	port := strconv.Itoa(n)
	ps := &portState{num: n, labels: prometheus.MakeLabelPairs(descState(), []string{ca, port})}
	ps.status, ps.statusErr = fs.OpenStatus(ca, n)
	ps.pma = openPMA(fs.OpenCounters(ca, n))
	ps.ext = openPMA(fs.OpenCountersExt(ca, n))
	s, err := fs.OpenHwCounters(ca, n)
	if !errors.Is(err, sysfs.ErrNotSupported) {
		ps.hw, ps.hwDir = newHwSet(s, err, ca, port), true
	}
	return ps
}

// openPMA makes the pmaSet of an opened counters/ or counters_ext/; nil
// when the port has no such directory.
func openPMA(set *sysfs.CounterSet, err error) *pmaSet {
	if errors.Is(err, sysfs.ErrNotSupported) {
		return nil
	}
	s := &pmaSet{set: set, err: err}
	if set == nil {
		return s
	}
	// Only the files node_exporter names are read (and held): a driver's
	// other files in counters/ have no series.
	keep := make([]bool, len(set.Names()))
	for i, n := range set.Names() {
		_, pma := pmaMetrics[n]
		_, legacy := legacyMetrics[n]
		keep[i] = pma || legacy
	}
	if err := set.Keep(keep); err != nil {
		set.Close()
		return &pmaSet{err: err}
	}
	names := set.Names()
	s.vals, s.ok = make([]uint64, len(names)), make([]bool, len(names))
	s.descs, s.octets = make([]*prometheus.Desc, len(names)), make([]bool, len(names))
	for i, n := range names {
		s.descs[i] = pmaDescs()[n]
		if m, ok := pmaMetrics[n]; ok {
			s.octets[i] = m.octets
		} else {
			s.octets[i] = legacyMetrics[n].octets
		}
	}
	return s
}

// newHwSet makes the hwSet of an opened hw_counters/ of device ca, port
// port ("" for the device-wide directory).
func newHwSet(set *sysfs.HwCounterSet, err error, ca, port string) *hwSet {
	s := &hwSet{set: set, err: err}
	if set == nil {
		return s
	}
	names := set.Names()
	s.vals, s.ok = make([]uint64, len(names)), make([]bool, len(names))
	s.descs = make([]*prometheus.Desc, len(names))
	for i, n := range names {
		if port == "" {
			s.labels = append(s.labels, prometheus.MakeLabelPairs(descDevHw(), []string{ca, n}))
			continue
		}
		s.descs[i] = hwDescs()[n]
		s.labels = append(s.labels, prometheus.MakeLabelPairs(descHw(), []string{ca, port, n}))
	}
	return s
}

// openFailed reports whether one of the port's files or directories could
// not be opened at discovery.
func (ps *portState) openFailed() bool {
	return ps.statusErr != nil || (ps.pma != nil && ps.pma.err != nil) ||
		(ps.ext != nil && ps.ext.err != nil) || (ps.hw != nil && ps.hw.err != nil)
}

// close closes the port's sets.
func (ps *portState) close() {
	if ps.status != nil {
		ps.status.Close()
	}
	for _, s := range []*pmaSet{ps.pma, ps.ext} {
		if s != nil && s.set != nil {
			s.set.Close()
		}
	}
	if ps.hw != nil && ps.hw.set != nil {
		ps.hw.set.Close()
	}
}

func (d *devices) close() {
	for _, ds := range d.cas {
		for _, ps := range ds.ports {
			ps.close()
		}
		if ds.hw != nil && ds.hw.set != nil {
			ds.hw.set.Close()
		}
	}
	d.cas = nil
}

// sample is one series' value in one scrape, written with label pairs
// made at discovery: a prometheus.Metric as MustNewConstMetric makes it,
// without making the label pairs again.
type sample struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	v      float64
	gauge  bool
	c      dto.Counter
	g      dto.Gauge
}

func (s *sample) Desc() *prometheus.Desc { return s.desc }

func (s *sample) Write(out *dto.Metric) error {
	out.Label = s.labels
	if s.gauge {
		s.g.Value = &s.v
		out.Gauge = &s.g
	} else {
		s.c.Value = &s.v
		out.Counter = &s.c
	}
	return nil
}

// samples hands out a scrape's samples from chunks allocated per scrape:
// a sent sample may be written by the registry after Collect returns, so
// a chunk is never reused, only left to the collector.
type samples struct {
	buf  []sample
	hint int // how many the last scrape used
	n    int
}

func (s *samples) reset() {
	if s.n > s.hint {
		s.hint = s.n
	}
	s.n, s.buf = 0, nil
}

func (s *samples) send(ch chan<- prometheus.Metric, desc *prometheus.Desc, labels []*dto.LabelPair, v float64, gauge bool) {
	if len(s.buf) == cap(s.buf) {
		s.buf = make([]sample, 0, max(s.hint-s.n, 64))
	}
	s.buf = s.buf[:len(s.buf)+1]
	m := &s.buf[len(s.buf)-1]
	m.desc, m.labels, m.v, m.gauge = desc, labels, v, gauge
	s.n++
	ch <- m
}

// collectSysfs reads the devices' sysfs files once and sends the series of
// the sysfs sources that are on: node_exporter's infiniband series
// (ib), and rdma_hw_stat_total and rdma_device_hw_stat_total (hw). It
// returns the first error of each source.
func (e *Exporter) collectSysfs(ch chan<- prometheus.Metric, cas []*devState, ib, hw bool) (ibErr, hwErr error) {
	l := losses{ib: ib, hw: hw}
	for _, ds := range cas {
		if ib {
			l.fail(ds, srcIB, 1, e.sendInfo(ch, ds))
		}
		if ds.portsErr != nil {
			// Nothing of the ports can be exported: one loss for each
			// source that exports port series.
			l.fail(ds, srcIB, b2i(ib), ds.portsErr)
			l.fail(ds, srcHw, b2i(hw), ds.portsErr)
		}
		for j, ps := range ds.ports {
			if ps.openFailed() {
				// A set that could not be opened may open now.
				ps.close()
				ps = openPort(e.fs, ds.name, ps.num)
				ds.ports[j] = ps
			}
			if ib {
				e.collectPortIB(ch, &l, ds, ps)
			}
			if ps.hw != nil && (ib || hw) {
				e.collectPortHw(ch, &l, ds, ps)
			}
		}
		if hw && ds.hw != nil {
			e.collectDevHw(ch, &l, ds)
		}
	}
	return l.ibErr, l.hwErr
}

// losses counts a scrape's failed reads by device and source, and keeps
// each source's first error.
type losses struct {
	ib, hw       bool // the sources collected
	ibErr, hwErr error
}

// fail counts n series of source src lost on ds to err (nothing when n is
// 0 or err nil).
func (l *losses) fail(ds *devState, src int, n int, err error) {
	if n == 0 || err == nil {
		return
	}
	ds.failed[src] += n
	switch {
	case src == srcIB && l.ibErr == nil:
		l.ibErr = err
	case src == srcHw && l.hwErr == nil:
		l.hwErr = err
	}
}

// collectPortIB sends a port's node_infiniband series from its status
// files and PMA counters.
func (e *Exporter) collectPortIB(ch chan<- prometheus.Metric, l *losses, ds *devState, ps *portState) {
	if ps.statusErr != nil {
		l.fail(ds, srcIB, 1, ps.statusErr)
	} else {
		var st sysfs.PortStatus
		ok, n, err := ps.status.ReadEach(&st)
		l.fail(ds, srcIB, n, err)
		if ok[0] {
			e.samples.send(ch, descState(), ps.labels, float64(st.State), true)
		}
		if ok[1] {
			e.samples.send(ch, descPhys(), ps.labels, float64(st.PhysState), true)
		}
		if ok[2] && st.HasRate {
			e.samples.send(ch, descRate(), ps.labels, float64(st.Rate.Mbps)*125000, true)
		}
	}
	for _, s := range []*pmaSet{ps.pma, ps.ext} {
		if s == nil {
			continue
		}
		if s.err != nil {
			l.fail(ds, srcIB, 1, s.err)
			continue
		}
		n, err := s.set.ReadAll(s.vals, s.ok)
		l.fail(ds, srcIB, n, err)
		for i, desc := range s.descs {
			if desc == nil || !s.ok[i] {
				continue
			}
			v := s.vals[i]
			if s.octets[i] {
				v = sysfs.DataOctets(v)
			}
			e.samples.send(ch, desc, ps.labels, float64(v), false)
		}
	}
}

// collectPortHw sends a port's hw_counters: rdma_hw_stat_total (source
// hw) and the ones node_exporter names, with lifespan_seconds (source
// ib).
func (e *Exporter) collectPortHw(ch chan<- prometheus.Metric, l *losses, ds *devState, ps *portState) {
	ib, hw := l.ib, l.hw
	if ps.hw.err != nil {
		l.fail(ds, srcHw, b2i(hw), ps.hw.err)
		l.fail(ds, srcIB, b2i(ib), ps.hw.err)
		return
	}
	n, err := ps.hw.set.ReadAll(ps.hw.vals, ps.hw.ok)
	if n > 0 {
		l.fail(ds, srcHw, b2i(hw)*n, err)
		if ib {
			lost := 0 // the failed files node_exporter names
			for i, ok := range ps.hw.ok {
				if !ok && ps.hw.descs[i] != nil {
					lost++
				}
			}
			l.fail(ds, srcIB, lost, err)
		}
	}
	for i, v := range ps.hw.vals {
		if !ps.hw.ok[i] {
			continue
		}
		if hw {
			e.samples.send(ch, descHw(), ps.hw.labels[i], float64(v), false)
		}
		if ib && ps.hw.descs[i] != nil {
			e.samples.send(ch, ps.hw.descs[i], ps.labels, float64(v), false)
		}
	}
	if ib && ps.hwDir {
		// node_exporter's lifespan_seconds: the milliseconds of
		// hw_counters/lifespan, divided by 1000 in integers.
		d, err := e.fs.HwCountersLifespan(ds.name, ps.num)
		switch {
		case err == nil:
			e.samples.send(ch, descLifespan(), ps.labels, float64(uint64(d/time.Millisecond)/1000), true)
		case !isNotExist(err):
			l.fail(ds, srcIB, 1, err)
		}
	}
}

// collectDevHw sends a device's own hw_counters (hfi1's):
// rdma_device_hw_stat_total.
func (e *Exporter) collectDevHw(ch chan<- prometheus.Metric, l *losses, ds *devState) {
	if ds.hw.err != nil {
		l.fail(ds, srcHw, 1, ds.hw.err)
		return
	}
	n, err := ds.hw.set.ReadAll(ds.hw.vals, ds.hw.ok)
	l.fail(ds, srcHw, n, err)
	for i, v := range ds.hw.vals {
		if ds.hw.ok[i] {
			e.samples.send(ch, descDevHw(), ds.hw.labels[i], float64(v), false)
		}
	}
}

// sendInfo sends the device's node_infiniband_info: its labels are read on
// every scrape (a firmware update changes fw_ver). A file that does not
// exist is an empty label, as node_exporter has it; one that cannot be
// read loses the series.
func (e *Exporter) sendInfo(ch chan<- prometheus.Metric, ds *devState) error {
	var vals [3]string
	for i, attr := range [3]string{"board_id", "fw_ver", "hca_type"} {
		s, err := e.fs.CAAttr(ds.name, attr)
		if err != nil && !isNotExist(err) {
			return err
		}
		vals[i] = strings.TrimSpace(s)
	}
	e.samples.send(ch, descInfo(), prometheus.MakeLabelPairs(descInfo(), []string{ds.name, vals[0], vals[1], vals[2]}), 1, true)
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
