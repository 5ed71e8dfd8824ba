package sys

import _ "unsafe" // go:linkname

// YieldP gives the processor (the runtime's P) up for a moment: the
// goroutine goes to the end of its P's run queue and the scheduler runs
// what is there, or it again. Loops that wait in system calls call it now
// and then (every eighth blocking read; verbs.Call.Pace, every 64th
// counters read). Such a goroutine never passes through the scheduler
// otherwise, so the scheduler's tick of its P stands still, and after
// 10 ms sysmon takes it for one that has run too long (runtime/proc.go,
// retake: forcePreemptNS): at every look that finds the goroutine in a
// system call it takes the P from under it and hands it off, and it keeps
// looking every 20 µs. Measured in rc_pingpong -e under TCG (an event
// every 0.2 ms): 1.3 k sysmon wake-ups a second, the goroutine moving
// between two threads, 0.4 more thread switches an event than rdma-core's
// loop, and 3-4 k kernel instructions an event; with a yield every eighth
// wait sysmon woke 0.1 k times a second (the notes of that round:
// git show 672a618:docs/performance.md, "Per message and per tool").
func YieldP() { goyield() }

// goyield is the runtime's goyield: runtime.Gosched without waking
// another thread to look for work (it puts the goroutine on its own P's
// run queue instead of the global one), a few hundred instructions when
// nothing else is runnable. The runtime keeps it for packages outside the
// standard library that use it, gVisor's among them (go.dev/issue/67401:
// "Do not remove or change the type signature").
//
//go:linkname goyield runtime.goyield
func goyield()
