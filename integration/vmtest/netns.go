package vmtest

import (
	"runtime"

	"github.com/vishvananda/netns"
)

// EnterNetns locks the calling goroutine to its thread and moves the
// thread into the network namespace named name (/run/netns/NAME, as
// `ip netns add` makes it). The thread never goes back: when the
// goroutine ends, the runtime ends the locked thread with it. RDMA CM IDs
// created on the goroutine afterwards belong to that namespace.
func EnterNetns(name string) error {
	runtime.LockOSThread()
	h, err := netns.GetFromName(name)
	if err != nil {
		return err
	}
	defer h.Close()
	return netns.Set(h)
}
