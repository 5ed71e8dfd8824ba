package sys

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// MapSet records the memory mappings an owner made (rings and doorbell
// records outside the Go heap, the device's pages), so that whatever is
// left can be released at once: by the owner's Close, or by a cleanup
// (runtime.AddCleanup) when the owner becomes unreachable without Close.
// The zero MapSet is not usable; a nil one maps and unmaps without
// recording. It is safe for concurrent use.
type MapSet struct {
	mu sync.Mutex
	t  mapTable // first byte → the mapping
}

// mapEnt is a mapping a MapSet recorded.
type mapEnt struct {
	b    []byte
	anon bool // MmapAnon's (recorded in anonMaps), else a device file's
}

// unmap unmaps e, forgetting it in anonMaps when it is there.
func (e mapEnt) unmap() error {
	if e.anon {
		return Munmap(e.b)
	}
	return munmap(e.b)
}

// mapped counts the bytes every MapSet holds mapped, for leak tests.
var mapped atomic.Int64

// Mapped returns how many bytes all MapSets hold mapped now.
func Mapped() int64 { return mapped.Load() }

// NewMapSet returns an empty set.
func NewMapSet() *MapSet { return &MapSet{} }

func (s *MapSet) add(b []byte, anon bool) {
	if s != nil && len(b) > 0 {
		s.mu.Lock()
		s.t.put(mapEnt{b: b, anon: anon})
		s.mu.Unlock()
		mapped.Add(int64(len(b)))
	}
}

// Anon is MmapAnon, recorded.
func (s *MapSet) Anon(length int) ([]byte, error) {
	b, err := MmapAnon(length)
	if err == nil {
		s.add(b, true)
	}
	return b, err
}

// Device is fd.Mmap, recorded.
func (s *MapSet) Device(fd *FD, offset int64, length, prot, flags int) ([]byte, error) {
	b, err := fd.Mmap(offset, length, prot, flags)
	if err == nil {
		s.add(b, false)
	}
	return b, err
}

// DeviceHeld is Device for a caller whose own lock keeps fd open for the
// call, as IoctlNumber's does (every mapping a uverbs Context makes is
// made under its life lock, which only its Close, holding it alone, takes
// to close the descriptor): the mapping is made on the descriptor's
// number, without the descriptor's lock.
func (s *MapSet) DeviceHeld(fd *FD, offset int64, length, prot, flags int) ([]byte, error) {
	raw := fd.Raw()
	if raw < 0 || length <= 0 {
		return s.Device(fd, offset, length, prot, flags) // a fake's, or the error
	}
	b, err := mmap(raw, offset, length, prot, flags)
	if err == nil {
		s.add(b, false)
	}
	return b, err
}

// Unmap is Munmap of a mapping the set made; it forgets it. Unmapping one
// it does not know (or one already unmapped) does nothing.
func (s *MapSet) Unmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if s == nil {
		return Munmap(b)
	}
	s.mu.Lock()
	e, ok := s.t.take(unsafe.SliceData(b))
	s.mu.Unlock()
	if !ok {
		return nil
	}
	mapped.Add(-int64(len(e.b)))
	return e.unmap()
}

// UnmapAll unmaps everything still recorded.
func (s *MapSet) UnmapAll() {
	if s == nil {
		return
	}
	s.mu.Lock()
	t := s.t
	s.t = mapTable{}
	s.mu.Unlock()
	for _, e := range t.slots {
		if e.b != nil {
			mapped.Add(-int64(len(e.b)))
			e.unmap()
		}
	}
}

// Len returns how many mappings are recorded.
func (s *MapSet) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.n
}

// mapTable is a MapSet's mappings by first byte: an open-addressing table
// with linear probing, keyed by page number (every mapping starts on a
// page), so that recording and forgetting a mapping (one per queue of
// each CQ and QP created and destroyed) is a few loads and stores
// rather than a map's hashing. A free slot has a nil b.
type mapTable struct {
	slots []mapEnt // a power of two long, at most half full
	n     int
}

// home is the slot a mapping starting at p is looked for first.
func (t *mapTable) home(p *byte) int {
	h := uint64(uintptr(unsafe.Pointer(p))>>12) * 0x9e3779b97f4a7c15
	return int(h>>32) & (len(t.slots) - 1)
}

// put records e, replacing a mapping recorded at the same address.
func (t *mapTable) put(e mapEnt) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	p := unsafe.SliceData(e.b)
	mask := len(t.slots) - 1
	for i := t.home(p); ; i = (i + 1) & mask {
		if t.slots[i].b == nil {
			t.slots[i] = e
			t.n++
			return
		}
		if unsafe.SliceData(t.slots[i].b) == p {
			t.slots[i] = e
			return
		}
	}
}

func (t *mapTable) grow() {
	old := t.slots
	t.slots = make([]mapEnt, max(8, 2*len(old)))
	t.n = 0
	for _, e := range old {
		if e.b != nil {
			t.put(e)
		}
	}
}

// take forgets the mapping starting at p and returns it.
func (t *mapTable) take(p *byte) (mapEnt, bool) {
	if t.n == 0 {
		return mapEnt{}, false
	}
	mask := len(t.slots) - 1
	i := t.home(p)
	for {
		b := t.slots[i].b
		if b == nil {
			return mapEnt{}, false
		}
		if unsafe.SliceData(b) == p {
			break
		}
		i = (i + 1) & mask
	}
	e := t.slots[i]
	// Backward-shift deletion: move up the entries after i whose home
	// is not between the hole and them, so that no probe meets a hole
	// before its entry.
	for j := (i + 1) & mask; t.slots[j].b != nil; j = (j + 1) & mask {
		h := t.home(unsafe.SliceData(t.slots[j].b))
		if (j-h)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = mapEnt{}
	t.n--
	return e, true
}
