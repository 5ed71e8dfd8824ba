//go:build !race

package exporter

// raceEnabled says the tests run with -race (see race_test.go).
const raceEnabled = false
