package playwright

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/internal/stats"
	"github.com/spotter-harness/spotter/screen"
)

const staticPage = `<!doctype html>
<meta charset="utf-8">
<style>
  body { font: 16px sans-serif; margin: 40px; }
  button { font-size: 20px; padding: 10px 20px; }
</style>
<h1>A static page</h1>
<p>Some text, a button and a list, as a typical form would have.</p>
<button id="b" style="position:absolute;left:100px;top:200px">Click me</button>
<ul><li>one</li><li>two</li><li>three</li></ul>
<input placeholder="a text field">`

// BenchmarkStep measures one step of the loop on a static page, as
// screen/cdp's BenchmarkStep does: a click, the settle, and a model-sized
// (1024x640) PNG or JPEG screenshot of a 1280x800 viewport. It runs at
// least 30 steps and reports their p50 and p95, and the p50 of the settle
// wait alone.
func BenchmarkStep(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, staticPage)
	}))
	defer srv.Close()
	for _, c := range []struct {
		dpr    float64
		format screen.Format
	}{{1, screen.PNG}, {2, screen.PNG}, {1, screen.JPEG}, {2, screen.JPEG}} {
		b.Run(fmt.Sprintf("dpr%g/%s", c.dpr, c.format), func(b *testing.B) {
			d := newDisplay(b, DisplayConfig{Viewport: screen.Size{W: 1280, H: 800}, DPR: c.dpr})
			load(b, d, srv.URL)
			click := click(150, 220)
			opts := screen.CaptureOptions{Size: screen.Size{W: 1024, H: 640}, Format: c.format}
			n := max(b.N, 30)
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
			b.ReportMetric(percentile(steps, 50), "p50-ms")
			b.ReportMetric(percentile(steps, 95), "p95-ms")
			b.ReportMetric(percentile(settles, 50), "settle-p50-ms")
		})
	}
}

// BenchmarkFit measures the resize in Go that Playwright's fixed screenshot
// scales make necessary: a 1280x800 PNG to 1024x640.
func BenchmarkFit(b *testing.B) {
	src := image.NewRGBA(image.Rect(0, 0, 1280, 800))
	for i := range src.Pix {
		src.Pix[i] = byte(i * 7)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, src); err != nil {
		b.Fatal(err)
	}
	for _, format := range []screen.Format{screen.PNG, screen.JPEG} {
		b.Run(string(format), func(b *testing.B) {
			r := captureReq{size: screen.Size{W: 1024, H: 640}, format: format, quality: 80}
			for b.Loop() {
				if _, err := r.fit(buf.Bytes()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// percentile returns the p-th percentile of ds in milliseconds (nearest
// rank, see internal/stats).
func percentile(ds []time.Duration, p int) float64 {
	return stats.Millis(stats.Percentile(ds, float64(p)))
}
