package exporter

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/purerdma/rdma/sysfs"
)

// devices is what the exporter keeps of the host's RDMA devices between
// scrapes: the devices and ports it discovered, with their counters/,
// hw_counters/ and status files held open (sysfs.CounterSet,
// sysfs.HwCounterSet, sysfs.PortStatusReader) and every series' label
// pairs made once. It is discovered again only when class/infiniband's
// entries change (sysfs.CAWatch) or the last scrape failed to read a
// device, so a scrape of an unchanged host reads each counter with one
// pread and allocates little besides what the registry does.
type devices struct {
	watch *sysfs.CAWatch
	stale bool  // discover again on the next scrape
	err   error // the last discovery's error, reported while it holds
	cas   []*devState
}

type devState struct {
	ca    *sysfs.CA
	info  []*dto.LabelPair
	ports []*portState
}

type portState struct {
	p      *sysfs.Port
	labels []*dto.LabelPair // device, port

	status    *sysfs.PortStatusReader
	statusErr error

	pma       *sysfs.CounterSet
	pmaErr    error
	pmaVals   []uint64
	pmaOK     []bool
	pmaDescs  []*prometheus.Desc // nil for a file node_exporter does not export
	pmaOctets []bool

	hw       *sysfs.HwCounterSet
	hwErr    error
	hwVals   []uint64
	hwLabels [][]*dto.LabelPair // device, port, counter
}

// refresh discovers the devices again when they changed; the error is the
// discovery's (a device that could not be read), reported on every scrape
// until a discovery succeeds.
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
	if _, err := fs.CANames(); isNotExist(err) {
		d.err = nil // no RDMA stack (no class/infiniband): no devices, not a failure
		return nil
	}
	cas, err := fs.CAs()
	d.err = err
	if err != nil {
		d.stale = true
	}
	for _, ca := range cas {
		ds := &devState{ca: ca, info: prometheus.MakeLabelPairs(descInfo(), []string{ca.Name, deref(ca.BoardID), deref(ca.FWVersion), deref(ca.HCAType)})}
		for _, p := range ca.Ports {
			ds.ports = append(ds.ports, openPort(p))
		}
		d.cas = append(d.cas, ds)
	}
	return d.err
}

func openPort(p *sysfs.Port) *portState {
	port := strconv.Itoa(p.Number)
	ps := &portState{p: p, labels: prometheus.MakeLabelPairs(descState(), []string{p.CA, port})}
	ps.status, ps.statusErr = p.OpenStatus()
	ps.pma, ps.pmaErr = p.OpenCounters()
	if ps.pma != nil {
		names := ps.pma.Names()
		ps.pmaVals, ps.pmaOK = make([]uint64, len(names)), make([]bool, len(names))
		ps.pmaDescs, ps.pmaOctets = make([]*prometheus.Desc, len(names)), make([]bool, len(names))
		for i, n := range names {
			if m, ok := pmaMetrics[n]; ok {
				ps.pmaDescs[i], ps.pmaOctets[i] = pmaDescs()[n], m.octets
			}
		}
	}
	ps.hw, ps.hwErr = p.OpenHwCounters()
	if ps.hw != nil {
		names := ps.hw.Names()
		ps.hwVals = make([]uint64, len(names))
		for _, n := range names {
			ps.hwLabels = append(ps.hwLabels, prometheus.MakeLabelPairs(descHw(), []string{p.CA, port, n}))
		}
	}
	return ps
}

func (d *devices) close() {
	for _, ds := range d.cas {
		for _, ps := range ds.ports {
			if ps.status != nil {
				ps.status.Close()
			}
			if ps.pma != nil {
				ps.pma.Close()
			}
			if ps.hw != nil {
				ps.hw.Close()
			}
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

func (e *Exporter) collectInfiniBand(ch chan<- prometheus.Metric, cas []*devState) error {
	var errs []error
	var st sysfs.PortStatus
	for _, ds := range cas {
		e.samples.send(ch, descInfo(), ds.info, 1, true)
		for _, ps := range ds.ports {
			if ps.statusErr != nil {
				errs = append(errs, ps.statusErr)
			} else if err := ps.status.Read(&st); err != nil {
				errs = append(errs, err)
			} else {
				e.samples.send(ch, descState(), ps.labels, float64(st.State), true)
				e.samples.send(ch, descPhys(), ps.labels, float64(st.PhysState), true)
				if st.HasRate {
					e.samples.send(ch, descRate(), ps.labels, float64(st.Rate.Mbps)*125000, true)
				}
			}
			if ps.pmaErr != nil {
				if !errors.Is(ps.pmaErr, sysfs.ErrNotSupported) { // no PMA: nothing to export, as node_exporter
					errs = append(errs, ps.pmaErr)
				}
				continue
			}
			if err := ps.pma.ReadValues(ps.pmaVals, ps.pmaOK); err != nil {
				errs = append(errs, err)
				continue
			}
			for i, desc := range ps.pmaDescs {
				if desc == nil || !ps.pmaOK[i] {
					continue
				}
				v := ps.pmaVals[i]
				if ps.pmaOctets[i] {
					v = sysfs.DataOctets(v)
				}
				e.samples.send(ch, desc, ps.labels, float64(v), false)
			}
		}
	}
	return errors.Join(errs...)
}

func (e *Exporter) collectHw(ch chan<- prometheus.Metric, cas []*devState) error {
	var errs []error
	for _, ds := range cas {
		for _, ps := range ds.ports {
			if ps.hwErr != nil {
				if !errors.Is(ps.hwErr, sysfs.ErrNotSupported) {
					errs = append(errs, ps.hwErr)
				}
				continue
			}
			if err := ps.hw.ReadValues(ps.hwVals); err != nil {
				errs = append(errs, err)
				continue
			}
			for i, v := range ps.hwVals {
				e.samples.send(ch, descHw(), ps.hwLabels[i], float64(v), false)
			}
		}
	}
	return errors.Join(errs...)
}
