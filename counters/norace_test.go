//go:build !race

package counters_test

const raceEnabled = false
