package verbs

import (
	"sync"
	"sync/atomic"
)

// lifeLock is a context's life lock: held shared by every operation and
// exclusively by Close, once. It is a reader count with a closing mark
// rather than a sync.RWMutex so that taking and releasing it (one atomic
// add each) inline into every operation; Close is its only writer.
//
// A hold taken after Close began fails: it waits for Close's teardown to
// finish, as a reader of the RWMutex would have, and then reports the
// context closed.
type lifeLock struct {
	// n counts the holds; Close subtracts lifeClosing from it, once, so
	// that it stays negative from then on.
	n atomic.Int64
	// drained is signalled by the release that leaves no hold after
	// Close began; Close waits for it when holds were in flight.
	drained chan struct{}
	// done is closed when Close's teardown has run.
	done chan struct{}
	// closeMu serialises Close calls; closing is under it.
	closeMu sync.Mutex
	closing bool
}

const lifeClosing = 1 << 40

func (l *lifeLock) init() {
	l.drained = make(chan struct{}, 1)
	l.done = make(chan struct{})
}

// rlock takes a hold; it reports false, once Close has finished, when
// Close had begun.
func (l *lifeLock) rlock() bool {
	if l.n.Add(1) > 0 {
		return true
	}
	return l.rlockClosing()
}

// rlockClosing is a failed rlock's: it gives the hold back and waits
// for Close to finish.
func (l *lifeLock) rlockClosing() bool {
	l.runlock()
	<-l.done
	return false
}

// runlock releases a hold.
func (l *lifeLock) runlock() {
	if l.n.Add(-1) == -lifeClosing {
		l.signal()
	}
}

// signal tells Close that no hold is left. More than one release (a
// failed rlock's among them) may see the count at zero: the first fills
// the buffer, the others find it full.
func (l *lifeLock) signal() {
	select {
	case l.drained <- struct{}{}:
	default:
	}
}

// lock marks the context closing, so that new holds fail, and waits for
// the holds in flight. It reports false, after the first Close finished,
// when Close was called before; otherwise unlock must follow.
func (l *lifeLock) lock() bool {
	l.closeMu.Lock()
	if l.closing {
		l.closeMu.Unlock()
		<-l.done
		return false
	}
	l.closing = true
	l.closeMu.Unlock()
	if l.n.Add(-lifeClosing) != -lifeClosing {
		<-l.drained
	}
	return true
}

// unlock ends Close: the holds that waited fail.
func (l *lifeLock) unlock() { close(l.done) }
