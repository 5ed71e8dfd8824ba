//go:build race

package main

// raceFactor scales the corpus's allocation bound under the race detector.
const raceFactor = 4
