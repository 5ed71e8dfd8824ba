package sys

import (
	"sort"
	"sync"
	"unsafe"
)

// anonMaps records every live mapping MmapAnon made, process-wide, so that
// memory registration can tell memory the library mapped (which stays put
// until it is unmapped) from anything else, the Go heap above all: the
// collector may reuse heap memory, or return it to the system, while a
// device still writes into it.
var anonMaps struct {
	mu sync.Mutex
	m  map[uintptr]int // start → length
}

func recordAnon(b []byte) {
	anonMaps.mu.Lock()
	if anonMaps.m == nil {
		anonMaps.m = map[uintptr]int{}
	}
	anonMaps.m[uintptr(unsafe.Pointer(unsafe.SliceData(b)))] = len(b)
	anonMaps.mu.Unlock()
}

func forgetAnon(b []byte) {
	anonMaps.mu.Lock()
	delete(anonMaps.m, uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	anonMaps.mu.Unlock()
}

// IsMapped reports whether b lies wholly inside one live mapping that
// MmapAnon made. Memory from make, new, append or a composite literal (the
// Go heap or a goroutine stack) never does.
func IsMapped(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	a := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	anonMaps.mu.Lock()
	defer anonMaps.mu.Unlock()
	// Few mappings live at once (rings, doorbell records, buffers): a
	// sorted scan is plenty for a registration path.
	starts := make([]uintptr, 0, len(anonMaps.m))
	for s := range anonMaps.m {
		starts = append(starts, s)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	i := sort.Search(len(starts), func(i int) bool { return starts[i] > a }) - 1
	if i < 0 {
		return false
	}
	s := starts[i]
	return a+uintptr(len(b)) <= s+uintptr(anonMaps.m[s])
}
