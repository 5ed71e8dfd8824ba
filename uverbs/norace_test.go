//go:build !race

package uverbs

const raceEnabled = false
