// Package screentest provides Fake, an in-memory display for tests of code
// that drives a display (the harness loop, provider adapters), without a
// browser, and Run, the conformance suite every display backend passes with
// the capabilities it declares (see Capability).
package screentest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"sync"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// Fake is a display that records what it is asked to perform and answers
// captures with a plain image of the requested size. Its zero value is a
// 1280x800 display at DPR 1. It is safe for concurrent use.
type Fake struct {
	Viewport screen.Size // default 1280x800
	DPR      float64     // default 1
	URL      string

	// Fail, when set, is asked before each action is performed; a non-nil
	// error fails that action (nothing is recorded).
	Fail func(m screen.Mapped) error

	mu          sync.Mutex
	failCapture func() error // see FailCaptures
	performed   []screen.Mapped
	frames      int
	gone        bool
}

// Performed returns the actions performed so far, in order.
func (f *Fake) Performed() []screen.Mapped {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]screen.Mapped(nil), f.performed...)
}

// FailCaptures makes fn decide each later capture: a non-nil error fails
// it, as a display that cannot draw would. A nil fn lets captures succeed
// again.
func (f *Fake) FailCaptures(fn func() error) {
	f.mu.Lock()
	f.failCapture = fn
	f.mu.Unlock()
}

// Kill makes every later call fail with screen.ErrGone, as a crashed
// browser would.
func (f *Fake) Kill() {
	f.mu.Lock()
	f.gone = true
	f.mu.Unlock()
}

// Perform records m.
func (f *Fake) Perform(ctx context.Context, m screen.Mapped) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	gone := f.gone
	f.mu.Unlock()
	if gone {
		return fmt.Errorf("perform %s: %w", m.Kind, screen.ErrGone)
	}
	if f.Fail != nil {
		if err := f.Fail(m); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.performed = append(f.performed, m)
	if m.Kind == actions.Navigate {
		f.URL = m.URL
	}
	return nil
}

// Capture returns a PNG (or a JPEG, if o.Format asks for one) of o.Size
// (default: the clip's CSS size) with a complete Frame.
func (f *Fake) Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	if err := ctx.Err(); err != nil {
		return screen.Shot{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone {
		return screen.Shot{}, fmt.Errorf("capture: %w", screen.ErrGone)
	}
	if f.failCapture != nil {
		if err := f.failCapture(); err != nil {
			return screen.Shot{}, err
		}
	}
	vp := f.Viewport
	if vp.Empty() {
		vp = screen.Size{W: 1280, H: 800}
	}
	dpr := cmp.Or(f.DPR, 1)
	clip := o.Region
	if clip.Empty() {
		clip = actions.Rect{Max: actions.Pt(float64(vp.W), float64(vp.H))}
	}
	sent := o.Size
	if sent.Empty() {
		sent = screen.Size{W: int(clip.Dx()), H: int(clip.Dy())}
	}
	f.frames++
	var buf bytes.Buffer
	img := image.NewGray(image.Rect(0, 0, sent.W, sent.H))
	for i := range img.Pix {
		img.Pix[i] = 0xEE
	}
	img.Set(0, 0, color.Gray{Y: byte(f.frames)}) // frames differ
	format := screen.PNG
	var err error
	if o.Format == screen.JPEG {
		format = screen.JPEG
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: cmp.Or(o.Quality, 80)})
	} else {
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img)
	}
	if err != nil {
		return screen.Shot{}, err
	}
	return screen.Shot{
		Frame: screen.Frame{
			ID:       fmt.Sprintf("f%04d", f.frames),
			Time:     time.Now(),
			URL:      f.URL,
			Viewport: vp,
			DPR:      dpr,
			Clip:     clip,
			Capture:  screen.Size{W: int(clip.Dx() * dpr), H: int(clip.Dy() * dpr)},
			Sent:     sent,
			Zoom:     1,
			Format:   format,
		},
		Data: buf.Bytes(),
	}, nil
}
