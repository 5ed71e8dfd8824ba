package umad

import (
	"context"
	"log/slog"
	"os"
	"sync/atomic"
)

var (
	debugLevel atomic.Int32
	debugLog   atomic.Pointer[slog.Logger]
)

// SetDebug sets the debug level and returns it (umad_debug, which
// libibumad's tools set from -d): 0 is off (the default), 1 logs opens,
// registrations and failures, 2 also every MAD sent and received. The
// library reads no environment variable; the tools of cmd/purerdma set
// the level from PURERDMA_UMAD_DEBUG.
// A negative level changes nothing, so SetDebug(-1) queries the level.
// Messages go to the logger SetLogger set, by default a text logger on
// standard error, at level Debug.
func SetDebug(level int) int {
	if level >= 0 {
		debugLevel.Store(int32(min(level, 1<<20)))
	}
	return int(debugLevel.Load())
}

// SetLogger sets the logger debug messages go to; nil restores the
// default (text on standard error).
func SetLogger(l *slog.Logger) { debugLog.Store(l) }

func debugOn(level int32) bool { return debugLevel.Load() >= level }

func logDebug(msg string, attrs ...slog.Attr) {
	l := debugLog.Load()
	if l == nil {
		l = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		debugLog.CompareAndSwap(nil, l)
	}
	l.LogAttrs(context.Background(), slog.LevelDebug, msg, attrs...)
}
