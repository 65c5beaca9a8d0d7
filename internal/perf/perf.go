// Package perf measures the ways a display can capture a screenshot at the
// size a model wants, and checks that each one shows the page as it is after
// the last action rather than a stale frame.
//
// The package's code is small: Summary, the percentiles of a set of latency
// samples. The measurements are its integration tests and benchmarks, which
// drive real Chromium and chromium-headless-shell and need
// SPOTTER_INTEGRATION=1:
//
//	SPOTTER_INTEGRATION=1 go test ./internal/perf/ -v
//	SPOTTER_INTEGRATION=1 go test ./internal/perf/ -run '^$' -bench CapturePaths/step -benchtime 1x -timeout 120m -v -capture.out /tmp/step.md
//
// docs/PERFORMANCE.md ("Capture paths") has the method, the results and the
// recommended capture path.
package perf

import (
	"fmt"
	"slices"
	"time"
)

// Summary describes a set of latency samples. Percentiles use the nearest-rank
// method, so each one is a sample that was observed.
type Summary struct {
	N   int
	Min time.Duration
	P50 time.Duration
	P95 time.Duration
	Max time.Duration
}

// Summarize returns the Summary of samples. It does not modify samples. The
// Summary of no samples is the zero Summary.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return Summary{
		N:   len(s),
		Min: s[0],
		P50: rank(s, 50),
		P95: rank(s, 95),
		Max: s[len(s)-1],
	}
}

// rank returns the p-th percentile of the sorted, non-empty s by nearest rank:
// the smallest sample with at least p percent of the samples at or below it.
func rank(s []time.Duration, p int) time.Duration {
	r := (p*len(s) + 99) / 100 // ceil(p/100 * n)
	return s[max(r, 1)-1]
}

// Ratio returns s's median over base's median, or 0 if base has no samples.
func (s Summary) Ratio(base Summary) float64 {
	if base.P50 <= 0 {
		return 0
	}
	return float64(s.P50) / float64(base.P50)
}

// String formats s in milliseconds, such as "p50 41.2 ms, p95 58.0 ms (n=50)".
func (s Summary) String() string {
	return fmt.Sprintf("p50 %s, p95 %s (n=%d)", ms(s.P50), ms(s.P95), s.N)
}

// ms formats d in milliseconds with one decimal.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
