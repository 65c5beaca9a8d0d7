package vnc

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"sync"
	"time"

	"golang.org/x/image/draw"
	"golang.org/x/image/math/f64"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// maxImageSide bounds the side of a captured image.
const maxImageSide = 16384

// Capture waits until the screen has settled (see the package
// documentation; bounded by o.SettleTimeout or Config.SettleTimeout), then
// returns o.Region of the live image (the whole screen if empty), scaled to
// exactly o.Size (the region's size if zero). A screen that keeps changing
// is captured anyway, with Frame.Settle.TimedOut and Reason set. On a desktop a CSS pixel is a screen pixel: Frame.DPR is 1 and
// Frame.URL is empty. Shot.Events tells of a change of the screen size.
//
// A capture of a screen that has not changed since the previous capture
// with the same options returns the same encoded bytes again, without
// encoding them anew: Shot.Data may be shared between shots, and must not
// be modified.
func (d *Display) Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	d.op.Lock()
	defer d.op.Unlock()
	if err := d.gone(); err != nil {
		return screen.Shot{}, fmt.Errorf("capture: %w", err)
	}
	format, quality := cmp.Or(o.Format, screen.PNG), cmp.Or(o.Quality, 80)
	if format != screen.PNG && format != screen.JPEG {
		return screen.Shot{}, fmt.Errorf("capture: %w: image format %q (want png or jpeg)", actions.ErrInvalid, o.Format)
	}
	if quality < 1 || quality > 100 {
		return screen.Shot{}, fmt.Errorf("capture: %w: JPEG quality %d (want 1..100)", actions.ErrInvalid, o.Quality)
	}
	timeout := o.SettleTimeout
	if timeout == 0 {
		timeout = d.cfg.SettleTimeout
	}
	settled, err := d.settle(ctx, timeout)
	if err != nil {
		return screen.Shot{}, fmt.Errorf("capture: %w", err)
	}

	d.mu.Lock()
	vp := screen.Size{W: d.live.Rect.Dx(), H: d.live.Rect.Dy()}
	clip, size, err := captureGeometry(o, vp)
	if err != nil {
		d.mu.Unlock()
		return screen.Shot{}, fmt.Errorf("capture: %w", err)
	}
	taken := time.Now()
	key := captureKey{gen: d.gen, clip: clip, size: size, format: format, quality: quality}
	var img *image.RGBA
	if key != d.cached.key || d.cached.data == nil {
		img = render(d.live, clip, size)
	}
	events := d.events
	d.events = nil
	d.mu.Unlock()

	data := d.cached.data
	if img != nil {
		data, err = encode(img, format, quality)
		if err != nil {
			return screen.Shot{}, fmt.Errorf("capture: encode %s: %w", format, err)
		}
		d.cached.key, d.cached.data = key, data
	}
	d.seq++
	return screen.Shot{
		Frame: screen.Frame{
			ID:       fmt.Sprintf("f%04d", d.seq),
			Time:     taken,
			Viewport: vp,
			DPR:      1,
			Clip:     clip,
			Capture:  screen.Size{W: round(clip.Dx()), H: round(clip.Dy())},
			Sent:     size,
			Format:   format,
			Settle:   settled,
		},
		Data:   data,
		Events: events,
	}, nil
}

// captureKey identifies an encoded capture: the same key on an unchanged
// screen gives the same bytes, so Capture encodes them only once.
type captureKey struct {
	gen     int // Display.gen
	clip    actions.Rect
	size    screen.Size
	format  screen.Format
	quality int
}

// captureGeometry returns the region of the screen to capture (o.Region
// clamped to the screen, or all of it) and the size of the image to make.
func captureGeometry(o screen.CaptureOptions, vp screen.Size) (actions.Rect, screen.Size, error) {
	clip, err := screen.ClampRegion(o.Region, vp)
	if err != nil {
		return clip, screen.Size{}, err
	}
	size := o.Size
	if size == (screen.Size{}) {
		size = screen.Size{W: max(1, round(clip.Dx())), H: max(1, round(clip.Dy()))}
	}
	if size.Empty() || size.W > maxImageSide || size.H > maxImageSide {
		return clip, screen.Size{}, fmt.Errorf("%w: image size %dx%d (want 1..%d each way)", actions.ErrInvalid, size.W, size.H, maxImageSide)
	}
	return clip, size, nil
}

// Scaling kernels (BenchmarkScale). Fitting a 1280x800 screen to 1024x640
// took 40-75 ms with ApproxBiLinear and 80-150 ms with BiLinear on a
// heavily loaded 2-core machine. ApproxBiLinear samples 2x2 source pixels per image
// pixel, which covers every source pixel down to half size; below that it
// skips pixels and thin strokes of text vanish, so stronger reductions use
// BiLinear, which averages all of them. Enlarging a zoom region uses
// CatmullRom, which keeps edges sharper; regions are small, so its cost
// does not matter.
var (
	downscaler     draw.Interpolator = draw.ApproxBiLinear
	downscalerFine draw.Interpolator = draw.BiLinear
	upscaler       draw.Interpolator = draw.CatmullRom
)

// kernel picks the scaling kernel for scale factors sx and sy (image
// pixels per screen pixel).
func kernel(sx, sy float64) draw.Interpolator {
	switch {
	case sx > 1 || sy > 1:
		return upscaler
	case sx < 0.5 || sy < 0.5:
		return downscalerFine
	}
	return downscaler
}

// render returns clip of src as a new image of size. A clip on whole pixels
// at its own size is copied; anything else is resampled.
func render(src *image.RGBA, clip actions.Rect, size screen.Size) *image.RGBA {
	dst := image.NewRGBA(image.Rect(0, 0, size.W, size.H))
	whole := image.Rect(int(clip.Min.X), int(clip.Min.Y), int(clip.Max.X), int(clip.Max.Y))
	aligned := float64(whole.Min.X) == clip.Min.X && float64(whole.Min.Y) == clip.Min.Y &&
		float64(whole.Max.X) == clip.Max.X && float64(whole.Max.Y) == clip.Max.Y
	if aligned && whole.Dx() == size.W && whole.Dy() == size.H {
		copyPixels(dst, src, whole, image.Point{})
		return dst
	}
	sx, sy := float64(size.W)/clip.Dx(), float64(size.H)/clip.Dy()
	k := kernel(sx, sy)
	if aligned {
		k.Scale(dst, dst.Rect, src, whole, draw.Src, nil)
		return dst
	}
	// A clip on fractional pixels: map it onto the image with an affine
	// transform, sampling the whole pixels that it touches.
	m := f64.Aff3{sx, 0, -clip.Min.X * sx, 0, sy, -clip.Min.Y * sy}
	cover := image.Rect(int(math.Floor(clip.Min.X)), int(math.Floor(clip.Min.Y)),
		int(math.Ceil(clip.Max.X)), int(math.Ceil(clip.Max.Y))).Intersect(src.Rect)
	k.Transform(dst, m, src, cover, draw.Src, nil)
	return dst
}

var pngBuffers pngPool

// pngPool reuses the PNG encoder's buffers between captures.
type pngPool struct{ p sync.Pool }

func (p *pngPool) Get() *png.EncoderBuffer {
	b, _ := p.p.Get().(*png.EncoderBuffer)
	return b
}

func (p *pngPool) Put(b *png.EncoderBuffer) { p.p.Put(b) }

// encode encodes img. PNGs use the fastest compression: the image goes to a
// model, which pays for pixels, not bytes.
func encode(img *image.RGBA, format screen.Format, quality int) ([]byte, error) {
	var buf bytes.Buffer
	var err error
	if format == screen.JPEG {
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality})
	} else {
		enc := png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &pngBuffers}
		err = enc.Encode(&buf, img)
	}
	return buf.Bytes(), err
}

// settle waits until the screen has settled, or until timeout has passed;
// a negative timeout does not wait. The screen has settled when no update
// has arrived for the quiet window, and, if input was sent after the
// latest update, once the reaction time after the input has passed
// without an update: an application redraws within some milliseconds of
// an input, and an input that changed nothing must not hold a capture up
// for long. settle fails only if ctx ends or the display is gone.
func (d *Display) settle(ctx context.Context, timeout time.Duration) (screen.Settle, error) {
	if timeout < 0 {
		return screen.Settle{}, nil
	}
	start := time.Now()
	deadline := start.Add(timeout)
	d.mu.Lock()
	updates := d.updates
	d.mu.Unlock()
	for {
		d.mu.Lock()
		quietAt := d.damagedAt.Add(d.quietWindow())
		if d.inputAt.After(d.damagedAt) {
			quietAt = d.inputAt.Add(d.reactionTime())
		}
		changed, n, err := d.changed, d.updates-updates, d.err
		d.mu.Unlock()
		if err != nil {
			return screen.Settle{}, err
		}
		now := time.Now()
		if !now.Before(quietAt) {
			return screen.Settle{Waited: now.Sub(start)}, nil
		}
		if !now.Before(deadline) {
			waited := now.Sub(start)
			return screen.Settle{
				Waited:   waited,
				TimedOut: true,
				Reason:   fmt.Sprintf("the screen kept changing (%d updates in %v)", n, waited.Round(time.Millisecond)),
			}, nil
		}
		wake := quietAt
		if deadline.Before(wake) {
			wake = deadline
		}
		t := time.NewTimer(wake.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return screen.Settle{}, fmt.Errorf("settle: %w", context.Cause(ctx))
		case <-d.dead:
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
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
