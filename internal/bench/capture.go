package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// capture measures Capture alone on a settled static page, at model size,
// as PNG and JPEG, in the default mode, against a Page.captureScreenshot-style
// full-resolution capture by Playwright's page.screenshot.
func (r *runner) capture(ctx context.Context) error {
	b, err := r.browser(ctx, cdp.ModeAuto)
	if err != nil {
		return err
	}
	defer b.Close(context.WithoutCancel(ctx))
	d, err := b.NewDisplay(ctx, cdp.DisplayConfig{Viewport: modelSize, DPR: 1})
	if err != nil {
		return err
	}
	defer d.Close(context.WithoutCancel(ctx))
	if _, err := openTab(ctx, d, r.site.url(pageStatic)); err != nil {
		return err
	}
	base, err := startBaseline(ctx, r.o.DriverDir, r.o.Node, r.o.Chromium)
	if err != nil {
		return err
	}
	defer base.Close()
	if err := base.open(ctx, "capture", r.site.url(pageStatic), 1); err != nil {
		return err
	}
	formats := []screen.Format{screen.PNG, screen.JPEG}
	samples := map[string][]time.Duration{}
	var baseSamples []time.Duration
	for round := -1; round < r.o.Rounds; round++ {
		for _, f := range formats {
			start := time.Now()
			if _, err := d.Capture(ctx, screen.CaptureOptions{Size: modelSize, Format: f}); err != nil {
				return err
			}
			if round >= 0 {
				samples[string(f)] = append(samples[string(f)], time.Since(start))
			}
		}
		rep, err := base.do(ctx, map[string]any{"op": "shot", "id": "capture"})
		if err != nil {
			return err
		}
		if round >= 0 {
			baseSamples = append(baseSamples, time.Duration(rep.NS))
		}
	}
	bf := latency("capture", "baseline playwright page.screenshot 1280x800 png", baseSamples)
	for _, f := range formats {
		fig := latency("capture", fmt.Sprintf("spotter %v capture 1280x800 %s", b.Mode(), f), samples[string(f)])
		fig.against(bf)
		fig.target("p50 <= 25 ms", fig.P50 <= 25)
		r.report(fig)
	}
	r.report(bf)
	return nil
}
