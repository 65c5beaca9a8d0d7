package stats_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/internal/stats"
)

func TestSummarize(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name string
		in   []time.Duration
		want stats.Summary
	}{
		{"none", nil, stats.Summary{}},
		{"one", []time.Duration{7 * ms}, stats.Summary{N: 1, Min: 7 * ms, P50: 7 * ms, P95: 7 * ms, Max: 7 * ms}},
		{"two", []time.Duration{9 * ms, 3 * ms}, stats.Summary{N: 2, Min: 3 * ms, P50: 3 * ms, P95: 9 * ms, Max: 9 * ms}},
		{
			"unsorted ten",
			[]time.Duration{10 * ms, 1 * ms, 9 * ms, 2 * ms, 8 * ms, 3 * ms, 7 * ms, 4 * ms, 6 * ms, 5 * ms},
			stats.Summary{N: 10, Min: 1 * ms, P50: 5 * ms, P95: 10 * ms, Max: 10 * ms},
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
			stats.Summary{N: 20, Min: 1 * ms, P50: 10 * ms, P95: 19 * ms, Max: 20 * ms},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.in...)
			got := stats.Summarize(in)
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
		s, base stats.Summary
		want    float64
	}{
		{"half", stats.Summary{P50: 50}, stats.Summary{P50: 100}, 0.5},
		{"same", stats.Summary{P50: 80}, stats.Summary{P50: 80}, 1},
		{"empty base", stats.Summary{P50: 80}, stats.Summary{}, 0},
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
	naive := stats.Summarize([]time.Duration{120 * time.Millisecond, 130 * time.Millisecond})
	s := stats.Summarize(samples)
	fmt.Println(s)
	fmt.Printf("%.2f of the baseline\n", s.Ratio(naive))
	// Output:
	// p50 41.0 ms, p95 97.0 ms (n=5)
	// 0.34 of the baseline
}

func TestPercentile(t *testing.T) {
	const ms = time.Millisecond
	ten := []time.Duration{10 * ms, 1 * ms, 9 * ms, 2 * ms, 8 * ms, 3 * ms, 7 * ms, 4 * ms, 6 * ms, 5 * ms}
	tests := []struct {
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 50, 0},
		{[]time.Duration{7 * ms}, 0, 7 * ms},
		{[]time.Duration{7 * ms}, 100, 7 * ms},
		{ten, 0, 1 * ms},
		{ten, 10, 1 * ms},
		{ten, 10.5, 2 * ms},
		{ten, 50, 5 * ms},
		{ten, 51, 6 * ms},
		{ten, 90, 9 * ms},
		{ten, 95, 10 * ms},
		{ten, 100, 10 * ms},
		{ten, 150, 10 * ms},
		{ten, -5, 1 * ms},
		{[]time.Duration{3 * ms, 1 * ms, 2 * ms, 4 * ms}, 50, 2 * ms}, // not the interpolated 2.5
		{[]time.Duration{3 * ms, 1 * ms, 2 * ms, 4 * ms}, 75, 3 * ms},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.in)
		if got := stats.Percentile(in, tt.p); got != tt.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", tt.in, tt.p, got, tt.want)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("Percentile(%v, %v) modified its input", tt.in, tt.p)
		}
	}
	// Summarize and Percentile agree.
	for n := 1; n <= 200; n++ {
		var s []time.Duration
		for i := n; i >= 1; i-- {
			s = append(s, time.Duration(i))
		}
		sum := stats.Summarize(s)
		if p50, p95 := stats.Percentile(s, 50), stats.Percentile(s, 95); sum.P50 != p50 || sum.P95 != p95 {
			t.Errorf("n=%d: Summarize P50, P95 = %v, %v; Percentile = %v, %v", n, sum.P50, sum.P95, p50, p95)
		}
		// Nearest rank: at least p percent at or below, fewer below.
		if want := time.Duration((95*n + 99) / 100); sum.P95 != want {
			t.Errorf("n=%d: P95 = %v, want rank ceil(0.95n) = %v", n, sum.P95, want)
		}
	}
}

func TestMillis(t *testing.T) {
	if got := stats.Millis(1500 * time.Microsecond); got != 1.5 {
		t.Errorf("Millis(1.5ms) = %v, want 1.5", got)
	}
}
