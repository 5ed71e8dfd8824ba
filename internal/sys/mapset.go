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
	m  map[*byte][]byte // first byte → the mapping
}

// mapped counts the bytes every MapSet holds mapped, for leak tests.
var mapped atomic.Int64

// Mapped returns how many bytes all MapSets hold mapped now.
func Mapped() int64 { return mapped.Load() }

// NewMapSet returns an empty set.
func NewMapSet() *MapSet { return &MapSet{m: map[*byte][]byte{}} }

func (s *MapSet) add(b []byte) {
	if s != nil && len(b) > 0 {
		s.mu.Lock()
		s.m[unsafe.SliceData(b)] = b
		s.mu.Unlock()
		mapped.Add(int64(len(b)))
	}
}

// Anon is MmapAnon, recorded.
func (s *MapSet) Anon(length int) ([]byte, error) {
	b, err := MmapAnon(length)
	if err == nil {
		s.add(b)
	}
	return b, err
}

// Device is fd.Mmap, recorded.
func (s *MapSet) Device(fd *FD, offset int64, length, prot, flags int) ([]byte, error) {
	b, err := fd.Mmap(offset, length, prot, flags)
	if err == nil {
		s.add(b)
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
	_, ok := s.m[a]
	delete(s.m, a)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	mapped.Add(-int64(len(b)))
	return Munmap(b)
}

// UnmapAll unmaps everything still recorded.
func (s *MapSet) UnmapAll() {
	if s == nil {
		return
	}
	s.mu.Lock()
	m := s.m
	s.m = map[*byte][]byte{}
	s.mu.Unlock()
	for _, b := range m {
		mapped.Add(-int64(len(b)))
		Munmap(b)
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
