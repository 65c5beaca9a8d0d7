package cdp

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/chromedp/cdproto/emulation"

	"github.com/spotter-harness/spotter/actions"
)

// Page zoom, as Ctrl+plus, Ctrl+minus and Ctrl+0 set it in a browser with
// a window. Headless Chromium has no zoom shortcuts, so the display zooms
// itself, the way Chromium implements zoom: the page is laid out in a
// viewport of 1/zoom the CSS size at zoom times the device pixel ratio,
// so that it fills the same window with everything zoom times larger.
//
// The display's coordinates stay those of the unzoomed viewport (what
// screen.Frame.Map produces): a point at (x, y) of the viewport is at
// (x, y)/zoom in the page's CSS px. Frame.Zoom records the factor. The
// zoom holds for the tab until changed, across navigations.

// zoomLevels are Chromium's zoom steps.
var zoomLevels = []float64{0.25, 1.0 / 3, 0.5, 2.0 / 3, 0.75, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5}

// zoomKey returns the zoom that the chord keys sets from the zoom cur, if
// keys is a zoom shortcut: Ctrl (or Meta) with plus, equals, minus or 0.
func zoomKey(keys actions.Chord, cur float64) (float64, bool) {
	if len(keys) < 2 {
		return 0, false
	}
	mods, key := keys[:len(keys)-1], keys[len(keys)-1]
	ctrl := false
	for _, m := range mods {
		switch m {
		case actions.Control, actions.Meta:
			ctrl = true
		case actions.Shift:
		default:
			return 0, false
		}
	}
	if !ctrl {
		return 0, false
	}
	switch key {
	case "+", "=", "NumpadAdd":
		for _, z := range zoomLevels {
			if z > cur+1e-6 {
				return z, true
			}
		}
		return cur, true
	case "-", "_", "NumpadSubtract":
		for _, z := range slices.Backward(zoomLevels) {
			if z < cur-1e-6 {
				return z, true
			}
		}
		return cur, true
	case "0", "Numpad0":
		return 1, true
	}
	return 0, false
}

// setZoom sets the active tab's page zoom.
func (d *Display) setZoom(ctx context.Context, z float64) error {
	if !(z >= zoomLevels[0] && z <= zoomLevels[len(zoomLevels)-1]) {
		return fmt.Errorf("%w: zoom %g", actions.ErrInvalid, z)
	}
	if d.cur == nil {
		return fmt.Errorf("zoom: no tab")
	}
	old := d.cur.zoom
	d.setTabZoom(z)
	if err := d.r.zoomed(ctx); err != nil {
		d.setTabZoom(old)
		return err
	}
	d.notes.add("The page zoom is now %d%%.", int(math.Round(z*100)))
	return nil
}

func (d *Display) setTabZoom(z float64) {
	d.tabMu.Lock()
	d.cur.zoom = z
	d.tabMu.Unlock()
}

// metricsFor returns the device metrics of the viewport vp at page zoom z
// and device pixel ratio dpr, drawn at scale s window px per unzoomed
// viewport px (0: no scaling).
func metricsFor(vpW, vpH int, dpr, z, s float64) emulation.SetDeviceMetricsOverrideParams {
	if z <= 0 {
		z = 1
	}
	p := emulation.SetDeviceMetricsOverrideParams{
		Width:             int64(math.Round(float64(vpW) / z)),
		Height:            int64(math.Round(float64(vpH) / z)),
		DeviceScaleFactor: dpr * z,
		ScreenWidth:       int64(math.Round(float64(vpW) / z)),
		ScreenHeight:      int64(math.Round(float64(vpH) / z)),
	}
	if s != 0 {
		p.Scale = s * z
		p.DontSetVisibleSize = new(true)
	}
	return p
}
