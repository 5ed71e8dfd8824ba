//go:build race

package counters_test

// raceEnabled: under the race detector sync.Pool drops a share of what is
// put back (sync/pool.go, Put), so Read, which takes its request from a
// pool, allocates at random.
const raceEnabled = true
