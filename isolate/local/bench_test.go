package local

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/isolate/isolatetest"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// BenchmarkStart measures a local sandbox from start to the first
// screenshot (p50-ms): the baseline of isolate/containerd's BenchmarkStart.
func BenchmarkStart(b *testing.B) {
	isolatetest.Integration(b)
	page := isolatetest.NewPage(b, isolatetest.Blue)
	var took []time.Duration
	for b.Loop() {
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s, err := Start(ctx, isolate.Config{Name: "bench", Egress: egress.Policy{Allow: []string{page.HostPort()}}})
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		d, err := isolate.Open(ctx, s, cdp.Config{Viewport: screen.Size{W: 1280, H: 800}})
		if err == nil {
			_, err = d.Capture(ctx, screen.CaptureOptions{})
			d.Close(context.Background())
		}
		took = append(took, time.Since(t0))
		s.Close(context.Background())
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(0, "ns/op")
}
