// Package stats summarizes latency samples for Spotter's benchmarks and
// load tests: spotter bench, the capture-path measurements and the
// backends' step benchmarks all report percentiles through it, so that a
// p95 means the same thing everywhere.
//
// Percentiles use the nearest-rank method: the p-th percentile of n
// samples is the smallest sample with at least p percent of the samples at
// or below it, the sample of rank ceil(p/100 * n) in ascending order. Every
// percentile is therefore a sample that was observed (no interpolation):
// the p50 of 10 samples is the 5th smallest, the p95 of 20 samples the
// 19th, the p95 of 10 samples the largest.
package stats

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Summary describes a set of latency samples.
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

// Percentile returns the p-th percentile (0 <= p <= 100) of samples by
// nearest rank; p = 0 is the smallest sample, p = 100 the largest. It does
// not modify samples, and returns 0 for no samples.
func Percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return rank(s, p)
}

// rank returns the p-th percentile of the sorted, non-empty s by nearest
// rank.
func rank(s []time.Duration, p float64) time.Duration {
	r := int(math.Ceil(p * float64(len(s)) / 100))
	return s[min(max(r, 1), len(s))-1]
}

// Millis returns d in milliseconds, as benchmarks report it.
func Millis(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
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
	return fmt.Sprintf("p50 %.1f ms, p95 %.1f ms (n=%d)", Millis(s.P50), Millis(s.P95), s.N)
}
