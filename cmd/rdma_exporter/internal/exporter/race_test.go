//go:build race

package exporter

// raceEnabled says the tests run with -race: TestScrapeAfterAStorm then
// builds the exporter with -race too, from the packages the test's own
// build compiled.
const raceEnabled = true
