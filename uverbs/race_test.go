//go:build race

package uverbs

// raceEnabled: under the race detector sync.Pool drops a share of what is
// put back (sync/pool.go, Put), so pooled paths allocate at random.
const raceEnabled = true
