//go:build race

package sys

import (
	"runtime"
	"unsafe"
)

// raceEnabled says the race detector is built in: rwNumber then tells it
// what the kernel read from and wrote into, as unix.Read and unix.Write
// do (x/sys/unix's race.go).
const raceEnabled = true

func raceReadRange(p unsafe.Pointer, n int)  { runtime.RaceReadRange(p, n) }
func raceWriteRange(p unsafe.Pointer, n int) { runtime.RaceWriteRange(p, n) }
