package cdp

import (
	"context"
	"fmt"
	"math"

	"github.com/chromedp/cdproto/emulation"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
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

// setZoom sets the active tab's page zoom.
func (d *Display) setZoom(ctx context.Context, z float64) error {
	if !(z >= screen.ZoomLevels[0] && z <= screen.ZoomLevels[len(screen.ZoomLevels)-1]) {
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
