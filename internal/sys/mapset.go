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
	m  map[*byte]mapEnt // first byte → the mapping
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
func NewMapSet() *MapSet { return &MapSet{m: map[*byte]mapEnt{}} }

func (s *MapSet) add(b []byte, anon bool) {
	if s != nil && len(b) > 0 {
		s.mu.Lock()
		s.m[unsafe.SliceData(b)] = mapEnt{b: b, anon: anon}
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

// Unmap is Munmap of a mapping the set made; it forgets it. Unmapping one
// it does not know (or one already unmapped) does nothing.
func (s *MapSet) Unmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if s == nil {
		return Munmap(b)
	}
	a := unsafe.SliceData(b)
	s.mu.Lock()
	e, ok := s.m[a]
	if ok {
		delete(s.m, a)
	}
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
	m := s.m
	s.m = map[*byte]mapEnt{}
	s.mu.Unlock()
	for _, e := range m {
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
	return len(s.m)
}
