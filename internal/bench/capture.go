package bench

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"time"

	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// capture measures Capture alone on a settled static page, at model size,
// as PNG and JPEG, in the default mode, against a Page.captureScreenshot-style
// full-resolution capture by Playwright's page.screenshot. Each format has
// a display of its own, as a session keeps one format. Two figures per
// format: the page unchanged since the last capture (in FrameControl mode
// no frame draws anything new, and the last screenshot is returned again
// without a new encode), and the page changed by a script just before the
// capture (the swatch flipped through Display.Eval: no input, so the
// settle learns of it only from the frames and the page's count of
// changes), which must be encoded anew; its swatch is checked.
func (r *runner) capture(ctx context.Context) error {
	b, err := r.browser(ctx, cdp.ModeAuto)
	if err != nil {
		return err
	}
	defer b.Close(context.WithoutCancel(ctx))
	formats := []screen.Format{screen.PNG, screen.JPEG}
	displays := map[screen.Format]*cdp.Display{}
	for _, f := range formats {
		d, err := b.NewDisplay(ctx, cdp.DisplayConfig{Viewport: modelSize, DPR: 1})
		if err != nil {
			return err
		}
		defer d.Close(context.WithoutCancel(ctx))
		if _, err := openTab(ctx, d, r.site.url(pageStatic)); err != nil {
			return err
		}
		displays[f] = d
	}
	base, err := startBaseline(ctx, r.o.DriverDir, r.o.Node, r.o.Chromium)
	if err != nil {
		return err
	}
	defer base.Close()
	if err := base.open(ctx, "capture", r.site.url(pageStatic), 1); err != nil {
		return err
	}
	same := map[screen.Format][]time.Duration{}
	changed := map[screen.Format][]time.Duration{}
	shots := map[screen.Format][]shotCheck{} // checked after the last round
	on := map[screen.Format]bool{}
	var baseSamples []time.Duration
	for round := -1; round < r.o.Rounds; round++ {
		for _, f := range formats {
			d, o := displays[f], screen.CaptureOptions{Size: modelSize, Format: f}
			start := time.Now()
			if _, err := d.Capture(ctx, o); err != nil {
				return err
			}
			took := time.Since(start)
			on[f] = !on[f]
			if _, err := d.Eval(ctx, fmt.Sprintf(`document.getElementById("s").style.background = %q`, swatchColor(on[f]))); err != nil {
				return fmt.Errorf("flip the swatch: %w", err)
			}
			start = time.Now()
			shot, err := d.Capture(ctx, o)
			if err != nil {
				return err
			}
			tookChanged := time.Since(start)
			if round < 0 {
				continue
			}
			same[f] = append(same[f], took)
			changed[f] = append(changed[f], tookChanged)
			shots[f] = append(shots[f], shotCheck{png: shot.Data, on: on[f]})
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
	mode := b.Mode()
	for _, f := range formats {
		fig := latency("capture", fmt.Sprintf("spotter %v capture 1280x800 %s", mode, f), same[f])
		fig.against(bf)
		fig.target("p50 <= 25 ms", fig.P50 <= 25)
		fig.Note = "page unchanged since the last capture"
		r.report(fig)
		fig = latency("capture", fmt.Sprintf("spotter %v capture 1280x800 %s, page changed", mode, f), changed[f])
		fig.against(bf)
		fig.Wrong = countWrong(shots[f])
		fig.Note = "a script changed the page before the capture: a new encode"
		if fig.Wrong > 0 {
			fig.Note = joinNote(fig.Note, fmt.Sprintf("%d of %d screenshots did not show the change", fig.Wrong, fig.N))
		}
		r.report(fig)
	}
	r.report(bf)
	return nil
}

// swatchColor is the CSS colour of the swatch, on or off.
func swatchColor(on bool) string {
	c := swatchOff
	if on {
		c = swatchOn
	}
	return fmt.Sprintf("rgb(%d, %d, %d)", c.R, c.G, c.B)
}

// shotSwatch decodes a screenshot of the whole viewport and reports the
// swatch's state, and whether it shows one.
func shotSwatch(data []byte) (on, ok bool) {
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return false, false
	}
	return swatchState(img, viewportPt)
}
