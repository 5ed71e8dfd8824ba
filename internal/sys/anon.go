package sys

import (
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
	// Mappings do not overlap: b is inside one when the one it starts in
	// holds its end too. Few live at once (rings, doorbell records,
	// buffers), so a scan will do, and it allocates nothing.
	for s, n := range anonMaps.m {
		if s <= a && a < s+uintptr(n) {
			return a+uintptr(len(b)) <= s+uintptr(n)
		}
	}
	return false
}
