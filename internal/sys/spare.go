package sys

import (
	"sync"
	"sync/atomic"
)

// Spare is a free list of buffers a call takes and gives back: one spare
// in an atomic slot, and a sync.Pool behind it for the buffers given back
// while the slot is full. A program that holds one buffer at a time, as a
// tool reading sysfs does, never touches the sync.Pool, whose first use
// allocates its per-P array: a fresh heap span, about 14 k instructions
// of a one-shot tool (make bench-insn's perfquery). Under concurrent use
// it is a sync.Pool with one more atomic swap. A Spare must not be copied.
type Spare[T any] struct {
	// New makes a buffer when none is spare; nil means new(T).
	New func() *T

	one  atomic.Pointer[T]
	more atomic.Bool // Put has given a buffer to pool
	pool sync.Pool
}

// Get takes a spare buffer, or makes one.
func (s *Spare[T]) Get() *T {
	if b := s.one.Swap(nil); b != nil {
		return b
	}
	if s.more.Load() {
		if b, _ := s.pool.Get().(*T); b != nil {
			return b
		}
	}
	if s.New != nil {
		return s.New()
	}
	return new(T)
}

// Put gives b back. b must not be used after.
func (s *Spare[T]) Put(b *T) {
	if b == nil || s.one.CompareAndSwap(nil, b) {
		return
	}
	if !s.more.Load() {
		s.more.Store(true)
	}
	s.pool.Put(b)
}
