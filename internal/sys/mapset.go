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
//
// Each mapping takes a slot, which the call that maps returns as a
// MapRef: unmapping names the slot, so that recording and forgetting a
// mapping (one per queue of each CQ and QP created and destroyed) is a
// few loads and stores, with no search.
type MapSet struct {
	mu   sync.Mutex
	ents []mapEnt // by slot; a free slot has a nil b
	free []int32  // the free slots
	n    int
}

// mapEnt is a mapping a MapSet recorded.
type mapEnt struct {
	b    []byte
	anon bool   // MmapAnon's (recorded in anonMaps), else a device file's
	gen  uint32 // counts the slot's uses, so that a stale MapRef finds nothing
}

// MapRef names a mapping in its MapSet: its slot plus one, and the
// slot's generation above. The zero MapRef names none.
type MapRef uint64

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

func (s *MapSet) add(b []byte, anon bool) MapRef {
	if s == nil || len(b) == 0 {
		return 0
	}
	s.mu.Lock()
	var i int32
	if k := len(s.free); k > 0 {
		i = s.free[k-1]
		s.free = s.free[:k-1]
	} else {
		i = int32(len(s.ents))
		s.ents = append(s.ents, mapEnt{})
	}
	e := &s.ents[i]
	e.b, e.anon = b, anon
	r := MapRef(uint64(i) + 1 | uint64(e.gen)<<32)
	s.n++
	s.mu.Unlock()
	mapped.Add(int64(len(b)))
	return r
}

// Anon is MmapAnon, recorded.
func (s *MapSet) Anon(length int) ([]byte, MapRef, error) {
	b, err := MmapAnon(length)
	if err != nil {
		return nil, 0, err
	}
	return b, s.add(b, true), nil
}

// Device is fd.Mmap, recorded.
func (s *MapSet) Device(fd *FD, offset int64, length, prot, flags int) ([]byte, MapRef, error) {
	b, err := fd.Mmap(offset, length, prot, flags)
	if err != nil {
		return nil, 0, err
	}
	return b, s.add(b, false), nil
}

// DeviceHeld is Device for a caller whose own lock keeps fd open for the
// call, as IoctlNumber's does (every mapping a uverbs Context makes is
// made under its life lock, which only its Close, holding it alone, takes
// to close the descriptor): the mapping is made on raw, the descriptor's
// number the caller took from fd.Raw once, without the descriptor's lock.
// A raw below 0 (a fake descriptor's) maps through fd.
func (s *MapSet) DeviceHeld(fd *FD, raw int, offset int64, length, prot, flags int) ([]byte, MapRef, error) {
	if raw < 0 || length <= 0 {
		return s.Device(fd, offset, length, prot, flags) // a fake's, or the error
	}
	b, err := mmap(raw, offset, length, prot, flags)
	if err != nil {
		return nil, 0, err
	}
	return b, s.add(b, false), nil
}

// Unmap unmaps b, a mapping the set made, which the call that made it
// named r, and forgets it. Unmapping one the set no longer holds (already
// unmapped, by Unmap or UnmapAll) does nothing. On a nil set it is
// Munmap.
func (s *MapSet) Unmap(b []byte, r MapRef) error {
	if len(b) == 0 {
		return nil
	}
	if s == nil {
		return Munmap(b)
	}
	i := int(uint32(r)) - 1
	s.mu.Lock()
	if i < 0 || i >= len(s.ents) {
		s.mu.Unlock()
		return nil
	}
	e := &s.ents[i]
	if e.gen != uint32(r>>32) || e.b == nil || unsafe.SliceData(e.b) != unsafe.SliceData(b) {
		s.mu.Unlock()
		return nil
	}
	m := *e
	e.b, e.anon = nil, false
	e.gen++
	s.free = append(s.free, int32(i))
	s.n--
	s.mu.Unlock()
	mapped.Add(-int64(len(m.b)))
	return m.unmap()
}

// UnmapAll unmaps everything still recorded. The slots stay, with their
// generations, so that a MapRef from before names nothing after.
func (s *MapSet) UnmapAll() {
	if s == nil {
		return
	}
	var left []mapEnt
	s.mu.Lock()
	for i := range s.ents {
		if e := &s.ents[i]; e.b != nil {
			left = append(left, *e)
			e.b, e.anon = nil, false
			e.gen++
			s.free = append(s.free, int32(i))
		}
	}
	s.n = 0
	s.mu.Unlock()
	for _, e := range left {
		mapped.Add(-int64(len(e.b)))
		e.unmap()
	}
}

// Len returns how many mappings are recorded.
func (s *MapSet) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}
