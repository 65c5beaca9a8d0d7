package cdp

import (
	"context"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// A renderer is how a display's page gets drawn, settled and captured: the
// strategy of one Mode. Its methods run under the display's lock.
type renderer interface {
	// setup emulates the display's viewport and device pixel ratio and
	// starts what the renderer needs, once the tab is open.
	setup(ctx context.Context) error
	// settle waits until the page is quiet, bounded by timeout (negative:
	// no wait), and readies the capture of r. It fails only if the page
	// cannot be used or ctx ends. It also returns the page's viewport if
	// it learned it as the page settled and it holds for the capture of r
	// (then the capture need not ask).
	settle(ctx context.Context, r captureReq, timeout time.Duration) (screen.Settle, viewport, error)
	// grab returns the encoded image of r; scroll is the page's scroll
	// offset in CSS px.
	grab(ctx context.Context, r captureReq, scroll actions.Point) ([]byte, error)
	// pointer readies the window for a pointer event, a wheel turn if
	// wheel, and returns the window's pixels per CSS pixel: the factor
	// of the event's coordinates.
	pointer(ctx context.Context, wheel bool) (scale float64, err error)
	// framed runs f, a command that Chromium answers only after the next
	// frame (a mouse move, a wheel turn), and sees that a frame comes.
	framed(ctx context.Context, f func(context.Context) error) error
	// zoomed applies a change of the active tab's page zoom.
	zoomed(ctx context.Context) error
}

// screencast is the renderer of Screencast mode: regular headless Chromium
// draws frames on its own clock; a screencast of tiny images tells when it
// drew one, and Page.captureScreenshot scales and encodes the capture.
type screencast struct {
	d   *Display
	tab *tab // nil in unit tests: the display's own fields
}

// screencastSize is the bound of the tiny screencast images that only serve
// as a signal that the page drew a new frame.
const screencastSize = 16

func (s *screencast) setup(ctx context.Context) error {
	d := s.d
	if err := s.zoomed(ctx); err != nil {
		return err
	}
	st, t, done := d.state, d.t, context.Background()
	if s.tab != nil {
		done = s.tab.ctx
	}
	d.wg.Go(func() { s.ackFrames(st, t, done) })
	q := int64(10)
	_, err := call(ctx, d, page.StartScreencast, page.StartScreencastParams{
		Format:        page.StartScreencastFormatJpeg,
		Quality:       &q,
		MaxWidth:      screencastSize,
		MaxHeight:     screencastSize,
		EveryNthFrame: 1, MaxFramesInFlight: 8,
	})
	return err
}

// zoomed emulates the viewport at the tab's page zoom.
func (s *screencast) zoomed(ctx context.Context) error {
	d := s.d
	vp := d.cfg.Viewport
	_, err := call(ctx, d, emulation.SetDeviceMetricsOverride, metricsFor(vp.W, vp.H, d.cfg.DPR, d.zoom(), 0))
	return err
}

// ackFrames acknowledges the screencast frames of the tab t, whose state
// is st, so that Chromium keeps sending them. It returns when the display
// closes or tabDone (the tab's chromedp context) ends.
func (s *screencast) ackFrames(st *pageState, t cdp.Session, tabDone context.Context) {
	d := s.d
	for {
		select {
		case <-d.bg.Done():
			return
		case <-tabDone.Done():
			return
		case <-st.ackWake:
		}
		for _, id := range st.takeAcks() {
			ctx, cancel := context.WithTimeout(d.bg, d.cfg.CommandTimeout)
			_, err := cdp.Call(ctx, t, page.ScreencastFrameAck, page.ScreencastFrameAckParams{SessionID: id})
			cancel()
			if err != nil && d.goneCause() != "" {
				return
			}
		}
	}
}

func (s *screencast) settle(ctx context.Context, _ captureReq, timeout time.Duration) (screen.Settle, viewport, error) {
	// The page draws on its own clock here: the viewport is asked just
	// before the capture.
	settled, err := s.d.settle(ctx, timeout)
	return settled, viewport{}, err
}

// grab is Page.captureScreenshot of the clip, which the browser scales and
// encodes itself. The clip of captureScreenshot is in document
// coordinates, so the page's scroll offset is added.
func (s *screencast) grab(ctx context.Context, r captureReq, scroll actions.Point) ([]byte, error) {
	d := s.d
	d.state.setCapturing(true)
	defer d.state.setCapturing(false)
	res, err := call(ctx, d, page.CaptureScreenshot, clipParams(r, scroll, d.zoom()))
	if err != nil {
		return nil, err
	}
	return res.Data, nil
}

func (s *screencast) framed(ctx context.Context, f func(context.Context) error) error { return f(ctx) }

// pointer: input events take the page's CSS px, 1/zoom of the viewport's.
func (s *screencast) pointer(context.Context, bool) (float64, error) { return 1 / s.d.zoom(), nil }

// clipParams are Page.captureScreenshot's parameters for r, at page zoom
// z: the clip is in CSS px of the document, 1/z of the viewport's px,
// and each CSS px is z times the device pixel ratio in device px.
func clipParams(r captureReq, scroll actions.Point, z float64) page.CaptureScreenshotParams {
	p := page.CaptureScreenshotParams{
		Format: page.CaptureScreenshotFormatPng,
		Clip: &page.Viewport{
			X:      r.clip.Min.X/z + scroll.X,
			Y:      r.clip.Min.Y/z + scroll.Y,
			Width:  r.clip.Dx() / z,
			Height: r.clip.Dy() / z,
			Scale:  r.scale,
		},
		OptimizeForSpeed: new(true),
	}
	if r.format == screen.JPEG {
		p.Format = page.CaptureScreenshotFormatJpeg
		p.Quality = new(int64(r.quality))
	}
	return p
}
