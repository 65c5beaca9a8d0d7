package perf_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/internal/perf"
)

func TestSummarize(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name string
		in   []time.Duration
		want perf.Summary
	}{
		{"none", nil, perf.Summary{}},
		{"one", []time.Duration{7 * ms}, perf.Summary{N: 1, Min: 7 * ms, P50: 7 * ms, P95: 7 * ms, Max: 7 * ms}},
		{"two", []time.Duration{9 * ms, 3 * ms}, perf.Summary{N: 2, Min: 3 * ms, P50: 3 * ms, P95: 9 * ms, Max: 9 * ms}},
		{
			"unsorted ten",
			[]time.Duration{10 * ms, 1 * ms, 9 * ms, 2 * ms, 8 * ms, 3 * ms, 7 * ms, 4 * ms, 6 * ms, 5 * ms},
			perf.Summary{N: 10, Min: 1 * ms, P50: 5 * ms, P95: 10 * ms, Max: 10 * ms},
		},
		{
			"twenty: p95 is the 19th",
			func() []time.Duration {
				var s []time.Duration
				for i := 20; i >= 1; i-- {
					s = append(s, time.Duration(i)*ms)
				}
				return s
			}(),
			perf.Summary{N: 20, Min: 1 * ms, P50: 10 * ms, P95: 19 * ms, Max: 20 * ms},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.in...)
			got := perf.Summarize(in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Summarize(%v) (-want +got):\n%s", tt.in, diff)
			}
			if diff := cmp.Diff(tt.in, in); diff != "" {
				t.Errorf("Summarize(%v) modified its input (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestSummaryRatio(t *testing.T) {
	tests := []struct {
		name    string
		s, base perf.Summary
		want    float64
	}{
		{"half", perf.Summary{P50: 50}, perf.Summary{P50: 100}, 0.5},
		{"same", perf.Summary{P50: 80}, perf.Summary{P50: 80}, 1},
		{"empty base", perf.Summary{P50: 80}, perf.Summary{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Ratio(tt.base); got != tt.want {
				t.Errorf("%v.Ratio(%v) = %v, want %v", tt.s, tt.base, got, tt.want)
			}
		})
	}
}

func ExampleSummarize() {
	samples := []time.Duration{
		41 * time.Millisecond, 38 * time.Millisecond, 44 * time.Millisecond,
		40 * time.Millisecond, 97 * time.Millisecond,
	}
	naive := perf.Summarize([]time.Duration{120 * time.Millisecond, 130 * time.Millisecond})
	s := perf.Summarize(samples)
	fmt.Println(s)
	fmt.Printf("%.2f of the baseline\n", s.Ratio(naive))
	// Output:
	// p50 41.0 ms, p95 97.0 ms (n=5)
	// 0.34 of the baseline
}
