package playwright

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"time"

	pw "github.com/playwright-community/playwright-go"
	"golang.org/x/image/draw"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// Capture waits until the page is quiet (bounded by the settle timeout),
// then returns a screenshot of o.Region (the viewport if empty) of exactly
// o.Size (the region's CSS size if zero). A page that never goes quiet is
// captured anyway, with Frame.Settle.TimedOut and Reason set.
func (d *Display) Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	req, err := d.captureRequest(o)
	if err != nil {
		return screen.Shot{}, fmt.Errorf("capture: %w", err)
	}
	timeout := o.SettleTimeout
	if timeout == 0 {
		timeout = d.cfg.SettleTimeout
	}
	// The active tab settles; a tab that opened or closed meanwhile (a
	// click's popup is announced a little after the click) makes the
	// display follow it and settle again, a few times at most.
	var (
		settled screen.Settle
		view    view
	)
	for attempt := 0; ; attempt++ {
		err = d.run(ctx, d.cfg.CommandTimeout, func(context.Context) error { return d.syncTabs() })
		if err != nil && !errors.Is(err, errBlocked) {
			return screen.Shot{}, fmt.Errorf("capture: %w", err)
		}
		if _, open := d.Dialog(); open {
			return d.blockedShot(req)
		}
		start := time.Now()
		settled, view, err = d.settle(ctx, timeout)
		if errors.Is(err, errBlocked) {
			return d.blockedShot(req)
		}
		if attempt < maxTabFollows && (errors.Is(err, errTabClosed) || d.awaitOpening(ctx, start.Add(max(timeout, 0)))) {
			continue
		}
		if err != nil {
			return screen.Shot{}, fmt.Errorf("capture: %w", err)
		}
		break
	}
	taken := time.Now()
	var data []byte
	err = d.run(ctx, d.cfg.CommandTimeout, func(context.Context) error {
		var err error
		data, err = d.grab(req)
		return err
	})
	if errors.Is(err, errBlocked) {
		return d.blockedShot(req)
	}
	if err != nil {
		return screen.Shot{}, fmt.Errorf("capture: %w", err)
	}
	data, err = req.fit(data)
	if err != nil {
		return screen.Shot{}, fmt.Errorf("capture: %w", err)
	}
	shot := d.shot(req, data, actions.Pt(view.ScrollX, view.ScrollY), cmp.Or(view.Zoom, 1), settled, taken)
	d.last.req, d.last.data, d.last.frame = req, data, shot.Frame
	return shot, nil
}

// shot numbers a capture and gathers the notes for the model.
func (d *Display) shot(req captureReq, data []byte, scroll actions.Point, zoom float64, settled screen.Settle, taken time.Time) screen.Shot {
	d.seq++
	tb := d.tab()
	url := tb.page.URL()
	events := append(d.notes.take(), tb.state.takeEvents()...)
	if d.seq > 1 && url != d.lastURL {
		events = append(events, "the page is now at "+url)
	}
	if dl, open := d.Dialog(); open {
		events = append(events, dl.Note())
	}
	d.lastURL = url
	dpr := d.cfg.DPR
	return screen.Shot{
		Frame: screen.Frame{
			ID:       fmt.Sprintf("f%04d", d.seq),
			Time:     taken,
			URL:      url,
			Viewport: d.cfg.Viewport,
			DPR:      dpr,
			Clip:     req.clip,
			Capture:  screen.Size{W: round(req.clip.Dx() * dpr), H: round(req.clip.Dy() * dpr)},
			Sent:     req.size,
			Scroll:   scroll,
			Zoom:     zoom,
			Format:   req.format,
			Settle:   settled,
		},
		Data:   data,
		Events: events,
		Log:    d.plog.Take(),
	}
}

// blockedShot is the capture while a JavaScript dialog blocks the page,
// when the page draws nothing and answers nothing: the previous image of
// the same request again, or a blank one, with the dialog in the notes.
func (d *Display) blockedShot(req captureReq) (screen.Shot, error) {
	data, scroll, zoom := d.last.data, d.last.frame.Scroll, d.last.frame.Zoom
	if data == nil || d.last.req != req {
		var err error
		if data, err = screen.BlankImage(req.size, req.format, req.quality); err != nil {
			return screen.Shot{}, fmt.Errorf("capture: %w", err)
		}
		scroll, zoom = actions.Point{}, 1
	}
	return d.shot(req, data, scroll, zoom,
		screen.Settle{Reason: "a JavaScript dialog blocks the page; the screenshot shows the page as it was drawn last"}, time.Now()), nil
}

// captureReq is a validated capture request.
type captureReq struct {
	clip    actions.Rect // CSS px of the viewport
	size    screen.Size  // the image to return
	device  bool         // ask Playwright for device pixels, not CSS pixels
	native  screen.Size  // the size of Playwright's image
	format  screen.Format
	quality int
}

// captureRequest validates o against the display's viewport.
func (d *Display) captureRequest(o screen.CaptureOptions) (captureReq, error) {
	vp := d.cfg.Viewport
	r := captureReq{format: cmp.Or(o.Format, screen.PNG), quality: cmp.Or(o.Quality, 80)}
	if r.format != screen.PNG && r.format != screen.JPEG {
		return r, fmt.Errorf("%w: image format %q (want png or jpeg)", actions.ErrInvalid, o.Format)
	}
	if r.quality < 1 || r.quality > 100 {
		return r, fmt.Errorf("%w: JPEG quality %d (want 1..100)", actions.ErrInvalid, o.Quality)
	}
	clip, err := screen.ClampRegion(o.Region, vp)
	if err != nil {
		return r, err
	}
	r.clip = clip
	css := screen.Size{W: round(r.clip.Dx()), H: round(r.clip.Dy())}
	r.size = o.Size
	if r.size == (screen.Size{}) {
		r.size = css
	}
	if r.size.Empty() || r.size.W > 16384 || r.size.H > 16384 {
		return r, fmt.Errorf("%w: image size %dx%d", actions.ErrInvalid, o.Size.W, o.Size.H)
	}
	// Playwright captures at one pixel per CSS pixel or per device pixel:
	// take the smallest that is at least as large as the image wanted.
	r.native = css
	if (r.size.W > css.W || r.size.H > css.H) && d.cfg.DPR > 1 {
		r.device = true
		r.native = screen.Size{W: round(r.clip.Dx() * d.cfg.DPR), H: round(r.clip.Dy() * d.cfg.DPR)}
	}
	return r, nil
}

// grab takes Playwright's screenshot of the request's clip.
func (d *Display) grab(r captureReq) ([]byte, error) {
	scale := pw.ScreenshotScaleCss
	if r.device {
		scale = pw.ScreenshotScaleDevice
	}
	o := pw.PageScreenshotOptions{
		Clip:       &pw.Rect{X: r.clip.Min.X, Y: r.clip.Min.Y, Width: r.clip.Dx(), Height: r.clip.Dy()},
		Scale:      scale,
		Caret:      pw.ScreenshotCaretInitial, // the model should see where the caret is
		Animations: pw.ScreenshotAnimationsAllow,
		Type:       pw.ScreenshotTypePng,
		Timeout:    new(float64(d.cfg.CommandTimeout.Milliseconds())),
	}
	if r.format == screen.JPEG {
		// Chromium encodes JPEG much faster than PNG. An image that fit
		// will resize is asked for at a high quality, and encoded once
		// more at r.quality.
		o.Type = pw.ScreenshotTypeJpeg
		o.Quality = new(r.quality)
		if r.native != r.size {
			o.Quality = new(max(r.quality, 90))
		}
	}
	return d.tab().page.Screenshot(o)
}

// fit returns Playwright's image as the request wants it: resized to
// r.size and encoded as r.format. An image that is already right passes
// unchanged.
func (r captureReq) fit(data []byte) ([]byte, error) {
	format, size, err := imageSize(data)
	if err != nil {
		return nil, fmt.Errorf("playwright returned a bad image: %w", err)
	}
	if size == r.size && format == r.format {
		return data, nil
	}
	var src image.Image
	if format == screen.JPEG {
		src, err = jpeg.Decode(bytes.NewReader(data))
	} else {
		src, err = png.Decode(bytes.NewReader(data))
	}
	if err != nil {
		return nil, fmt.Errorf("decode playwright's %dx%d %s: %w", size.W, size.H, format, err)
	}
	dst := src
	if size != r.size {
		img := image.NewRGBA(image.Rect(0, 0, r.size.W, r.size.H))
		draw.BiLinear.Scale(img, img.Bounds(), src, src.Bounds(), draw.Src, nil)
		dst = img
	}
	var buf bytes.Buffer
	if r.format == screen.JPEG {
		err = jpeg.Encode(&buf, dst, &jpeg.Options{Quality: r.quality})
	} else {
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, dst)
	}
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", r.format, err)
	}
	return buf.Bytes(), nil
}

// imageSize reads the format and size of a PNG or JPEG from its header.
func imageSize(data []byte) (screen.Format, screen.Size, error) {
	var (
		format screen.Format
		c      image.Config
		err    error
	)
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		format = screen.PNG
		c, err = png.DecodeConfig(bytes.NewReader(data))
	case bytes.HasPrefix(data, []byte{0xff, 0xd8}):
		format = screen.JPEG
		c, err = jpeg.DecodeConfig(bytes.NewReader(data))
	default:
		return "", screen.Size{}, errors.New("neither PNG nor JPEG")
	}
	if err != nil {
		return "", screen.Size{}, err
	}
	return format, screen.Size{W: c.Width, H: c.Height}, nil
}

// view is where the page is scrolled and zoomed, as the settle script
// reports it.
type view struct {
	Quiet   bool    `json:"quiet"`
	Reason  string  `json:"reason"`
	ScrollX float64 `json:"scrollX"`
	ScrollY float64 `json:"scrollY"`
	Zoom    float64 `json:"zoom"`
}

// settleJS waits in the page, frame by frame, until the document has
// loaded and for quietMs nothing changed: no DOM mutation, no scroll (of
// the page or of any element) and no running animation, or until
// timeoutMs. It always waits two frames, so that the effects of input
// delivered before it have begun. It changes nothing in the page and
// removes its listeners.
const settleJS = `async ([quietMs, timeoutMs]) => {
	const start = performance.now();
	let last = start, reason = "";
	const busy = why => () => { last = performance.now(); reason = why; };
	const onMutation = busy("the page kept changing");
	const onScroll = busy("the page kept scrolling");
	const mo = new MutationObserver(onMutation);
	mo.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
	addEventListener("scroll", onScroll, { capture: true, passive: true });
	const view = quiet => ({ quiet, reason, scrollX, scrollY, zoom: window.visualViewport ? visualViewport.scale : 1 });
	try {
		for (let n = 1; ; n++) {
			await new Promise(r => requestAnimationFrame(() => r()));
			const now = performance.now();
			if (document.readyState !== "complete") {
				last = now;
				reason = "the page is still loading";
			}
			let running = 0;
			for (const a of document.getAnimations()) if (a.playState === "running") running++;
			if (running > 0) {
				last = now;
				reason = running + " animation(s) still running";
			}
			if (n >= 2 && now - last >= quietMs) return view(true);
			if (now - start >= timeoutMs) {
				if (!reason) reason = "the page drew too few frames to tell";
				return view(false);
			}
		}
	} finally {
		mo.disconnect();
		removeEventListener("scroll", onScroll, { capture: true });
	}
}`

// settle waits until the page is quiet or timeout has passed; a negative
// timeout does not wait. It fails only if the display is gone, the page
// does not answer, or ctx ends.
func (d *Display) settle(ctx context.Context, timeout time.Duration) (screen.Settle, view, error) {
	if timeout < 0 {
		v, err := d.probe(ctx, 0, 0)
		return screen.Settle{}, v, err
	}
	start := time.Now()
	deadline := start.Add(timeout)
	// Requests that were already running a timeout before the wait began
	// are long-lived (a long poll): they are not waited for.
	since := start.Add(-timeout)
	reason := ""
	for {
		pending, gen := d.tab().state.network(since)
		if len(pending) > 0 {
			reason = pendingReason(pending)
			if !time.Now().Before(deadline) {
				break
			}
			if err := d.waitNetwork(ctx, deadline); err != nil {
				return screen.Settle{}, view{}, err
			}
			continue
		}
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		v, err := d.probe(ctx, d.cfg.QuietWindow, left)
		if err != nil {
			if errors.Is(err, screen.ErrGone) || errors.Is(err, ErrUnresponsive) || ctx.Err() != nil {
				return screen.Settle{}, view{}, err
			}
			// The document went away under the script (a navigation):
			// ask again when it is back.
			reason = "the page is changing documents"
			wake := time.Now().Add(d.cfg.QuietWindow)
			if deadline.Before(wake) {
				wake = deadline
			}
			if err := d.waitNetwork(ctx, wake); err != nil {
				return screen.Settle{}, view{}, err
			}
			continue
		}
		if pending, now := d.tab().state.network(since); len(pending) > 0 || now != gen {
			reason = "the page kept using the network"
			continue // a request started or ended meanwhile
		}
		if !v.Quiet { // the script waited until the deadline
			reason = v.Reason
			break
		}
		return screen.Settle{Waited: time.Since(start)}, v, nil
	}
	// Timed out: capture anyway, where the page is now.
	v, err := d.probe(ctx, 0, 0)
	if err != nil {
		return screen.Settle{}, view{}, err
	}
	return screen.Settle{Waited: time.Since(start), TimedOut: true, Reason: reason}, v, nil
}

// waitNetwork waits until a request starts or ends, or until deadline.
func (d *Display) waitNetwork(ctx context.Context, deadline time.Time) error {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-d.closed:
		return fmt.Errorf("display closed: %w", screen.ErrGone)
	case <-d.tab().state.changed:
	case <-t.C:
	}
	return nil
}

// probe runs settleJS with the given quiet window and timeout.
func (d *Display) probe(ctx context.Context, quiet, timeout time.Duration) (view, error) {
	var v view
	err := d.run(ctx, timeout+d.cfg.CommandTimeout, func(context.Context) error {
		res, err := d.tab().page.Evaluate(settleJS, []float64{float64(quiet.Milliseconds()), float64(timeout.Milliseconds())})
		if err != nil {
			return err
		}
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &v)
	})
	if err != nil {
		return view{}, fmt.Errorf("settle: %w", err)
	}
	return v, nil
}

func round(f float64) int { return int(math.Round(f)) }

func finite(fs ...float64) bool {
	for _, f := range fs {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
	}
	return true
}
