package main

import (
	"fmt"
	"strings"
	"testing"
)

func totals(ts ...uint64) []sample {
	xs := make([]sample, len(ts))
	for i, t := range ts {
		xs[i] = sample{user: t / 4, kern: t - t/4}
	}
	return xs
}

func TestTrimmedMean(t *testing.T) {
	for _, tc := range []struct {
		xs   []sample
		want uint64
	}{
		{totals(7), 7},
		{totals(1, 2, 3, 4, 5, 6, 7, 8, 9), 5}, // under ten: none set aside
		// ten: the lowest and the highest set aside, whatever they are
		{totals(1000, 10, 10, 10, 10, 10, 10, 10, 10, 0), 10},
		// 41 runs, one lengthened fivefold: four of each end set aside
		{append(totals(100, 500), totals(100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100,
			100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100)...), 100},
		{totals(3, 4), 3}, // rounded down
	} {
		if got := trimmedMean(tc.xs); got != tc.want {
			t.Errorf("trimmedMean(%v) = %d, want %d", tc.xs, got, tc.want)
		}
	}
}

// perTool takes each row's runs on CPU 1 (the second CPU's pair of a
// global window), less the start-up of /bin/true for C and of the minimal
// Go program for Go.
func TestPerTool(t *testing.T) {
	var in strings.Builder
	in.WriteString("# insnmark target=x86_64\n")
	row := func(code int, cpu1 uint64) {
		// CPU 0's counts are not the tool's, and are left out.
		fmt.Fprintf(&in, "%d G 999999 999999 %d %d\n", code, cpu1/4, cpu1-cpu1/4)
	}
	for range 3 {
		row(2, 1000) // /bin/true
		row(3, 3000) // the minimal Go program
	}
	// Each row its own counts, C's apart from Go's: C's work 4,000 + k
	// thousand, Go's 2,000 + k hundred.
	for k := range tools {
		row(2*(k+1)+2, uint64(5000+1000*k))
		row(2*(k+1)+3, uint64(5000+100*k))
	}
	s, err := parse(strings.NewReader(in.String()))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	perTool(&out, s)
	got := out.String()
	for _, want := range []string{
		"start-up: /bin/true 1000, a minimal Go program 3000 (least 1000, 3000)",
		fmt.Sprintf("%-40s %10d %10d | %10d %10d | %9s | %s\n", tools[0], 5000, 5000, 4000, 2000, "0.50", "0.50"),
		fmt.Sprintf("%-40s %10d %10d | %10d %10d | %9s | %s\n", tools[1], 6000, 5100, 5000, 2100, "0.42", "0.42"),
		fmt.Sprintf("%-40s %10d %10d | %10d %10d | %9s | %s\n", tools[9], 14000, 5900, 13000, 2900, "0.22", "0.22"),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("perTool's output lacks %q:\n%s", want, got)
		}
	}
	if _, err := parse(strings.NewReader("3 G x 1\n")); err == nil {
		t.Error("parse took a count that is not a number")
	}
}
