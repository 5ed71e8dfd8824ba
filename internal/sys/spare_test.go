package sys

import (
	"sync"
	"testing"
)

func TestSpare(t *testing.T) {
	var made int
	s := Spare[[4]byte]{New: func() *[4]byte { made++; return new([4]byte) }}
	a := s.Get()
	if made != 1 {
		t.Fatalf("Get with nothing spare made %d buffers", made)
	}
	s.Put(a)
	if b := s.Get(); b != a || made != 1 {
		t.Fatalf("Get after Put: %p, want the spare %p; made %d", b, a, made)
	}
	b := s.Get()
	s.Put(a)
	s.Put(b) // the slot is full: b goes to the pool
	if !s.more.Load() || s.one.Load() != a {
		t.Fatalf("after two Puts: pool used %v, slot %p, want true and %p", s.more.Load(), s.one.Load(), a)
	}
	s.Put(nil)
	if s.Get() != a {
		t.Fatal("Put(nil) replaced the spare")
	}
	// The pool may have dropped b (a collection does; under -race, Put
	// drops some on purpose), so the next Get is b or a new buffer.
	if c := s.Get(); c == a || c == nil {
		t.Fatalf("Get with the slot empty gave %p (the spare taken: %p)", c, a)
	}

	var z Spare[[8]byte] // nil New: new(T)
	if p := z.Get(); p == nil {
		t.Fatal("zero Spare's Get gave nil")
	}
}

func TestSpareNoPoolUntilOverflow(t *testing.T) {
	var s Spare[[16]byte]
	for range 3 {
		s.Put(s.Get())
	}
	if s.more.Load() {
		t.Fatal("one buffer at a time reached the sync.Pool")
	}
	if n := testing.AllocsPerRun(100, func() { s.Put(s.Get()) }); n != 0 {
		t.Fatalf("Get and Put of the spare: %v allocations", n)
	}
}

// TestSpareConcurrent: no buffer is held by two goroutines at once.
func TestSpareConcurrent(t *testing.T) {
	var s Spare[[64]byte]
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				b := s.Get()
				for i := range b {
					b[i] = byte(g + 1)
				}
				for i := range b {
					if b[i] != byte(g+1) {
						t.Errorf("goroutine %d's buffer changed under it", g)
						return
					}
				}
				s.Put(b)
			}
		}()
	}
	wg.Wait()
}
