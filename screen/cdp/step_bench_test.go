package cdp

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// BenchmarkStep measures one step of the loop on a static page: a click,
// the settle, and a model-sized (1024x640) PNG or JPEG screenshot of a
// 1280x800 viewport. It runs at least 50 steps and reports their p50 and p95, and
// the p50 of the settle wait alone.
func BenchmarkStep(b *testing.B) {
	for _, c := range []struct {
		dpr    float64
		format screen.Format
	}{{1, screen.PNG}, {2, screen.PNG}, {1, screen.JPEG}, {2, screen.JPEG}} {
		dpr := c.dpr
		b.Run(fmt.Sprintf("dpr%g/%s", dpr, c.format), func(b *testing.B) {
			d := newDisplay(b, DisplayConfig{Viewport: screen.Size{W: 1280, H: 800}, DPR: dpr})
			load(b, d, "static.html")
			center := eval[[]float64](b, d, `(r => [r.x + r.width/2, r.y + r.height/2])(document.getElementById("b").getBoundingClientRect())`)
			click := kind(actions.Click, at(center[0], center[1]))
			opts := screen.CaptureOptions{Size: screen.Size{W: 1024, H: 640}, Format: c.format}
			n := max(b.N, 50)
			steps := make([]time.Duration, 0, n)
			settles := make([]time.Duration, 0, n)
			b.ResetTimer()
			for range n {
				start := time.Now()
				if err := d.Perform(b.Context(), screen.Mapped{Action: click}); err != nil {
					b.Fatalf("Perform(click) = %v", err)
				}
				shot, err := d.Capture(b.Context(), opts)
				if err != nil {
					b.Fatalf("Capture() = %v", err)
				}
				steps = append(steps, time.Since(start))
				settles = append(settles, shot.Frame.Settle.Waited)
			}
			b.StopTimer()
			var total time.Duration
			for _, s := range steps {
				total += s
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(n), "ns/op")
			b.ReportMetric(percentile(steps, 50), "p50-ms")
			b.ReportMetric(percentile(steps, 95), "p95-ms")
			b.ReportMetric(percentile(settles, 50), "settle-p50-ms")
		})
	}
}

// percentile returns the p-th percentile of ds in milliseconds.
func percentile(ds []time.Duration, p int) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(len(s)*p/100, len(s)-1)
	return float64(s[i].Microseconds()) / 1000
}
