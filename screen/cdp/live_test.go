package cdp

import (
	"bytes"
	"context"
	"errors"
	"image"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// watching is a Watch running in the background of a test.
type watching struct {
	mu      sync.Mutex
	frames  []screen.LiveFrame
	arrived []time.Time // when each frame was handed on
	done    chan error
}

// watch watches d until the test ends, at 640x400.
func watch(t *testing.T, d *Display) *watching {
	t.Helper()
	w := &watching{done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		w.done <- d.Watch(ctx, screen.LiveOptions{Size: screen.Size{W: 640, H: 400}}, func(f screen.LiveFrame) {
			w.mu.Lock()
			w.frames, w.arrived = append(w.frames, f), append(w.arrived, time.Now())
			w.mu.Unlock()
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-w.done; !errors.Is(err, context.Canceled) {
			t.Errorf("Watch() = %v, want it to end with its context", err)
		}
	})
	return w
}

func (w *watching) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.frames)
}

func (w *watching) since(n int) []screen.LiveFrame {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]screen.LiveFrame(nil), w.frames[n:]...)
}

func (w *watching) arrivals(n int) []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Time(nil), w.arrived[n:]...)
}

// until polls cond (a condition; no fixed sleep decides anything) until it
// holds, within a minute.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for !cond() {
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		}
	}
}

// boxColour is the colour at the middle of live.html's box in a frame.
func boxColour(t *testing.T, f screen.LiveFrame) [3]uint32 {
	t.Helper()
	img, _, err := image.Decode(bytes.NewReader(f.Data))
	if err != nil {
		t.Fatalf("a live frame does not decode: %v", err)
	}
	r, g, b, _ := img.At(500*f.Size.W/1280, 350*f.Size.H/800).RGBA()
	return [3]uint32{r >> 8, g >> 8, b >> 8}
}

// A watch starts with a frame of the page as it is; then a page that does
// not change sends nothing, however long it is watched; one that changes at every animation frame sends JPEG frames of
// the asked size that show it changing, no closer together than the
// interval.
func TestWatchSendsChangesOnly(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "live.html")
	w := watch(t, d)
	// The watch starts with the page as it is (a screencast that starts
	// may draw it twice, the second held for the next look).
	until(t, "the first frame", func() bool { return w.count() >= 1 })
	ticks := d.live.ticks.Load()
	until(t, "two more looks", func() bool { return d.live.ticks.Load() >= ticks+2 })
	n, ticks, grabs := w.count(), d.live.ticks.Load(), d.live.grabs.Load()
	until(t, "ten more looks", func() bool { return d.live.ticks.Load() >= ticks+10 })
	if extra, g := w.since(n), d.live.grabs.Load()-grabs; len(extra) > 0 || g > 0 {
		t.Errorf("a static page made %d captures and sent %d live frames over 10 looks, want none", g, len(extra))
	}

	do(t, d, actions.Action{Kind: actions.Navigate, URL: testURL(t, "live.html?endless=1")})
	n = w.count()
	until(t, "ten frames of a changing page", func() bool { return w.count() >= n+10 })
	got, at := w.since(n), w.arrivals(n)
	colours := map[[3]uint32]bool{}
	for i, f := range got {
		if f.Format != screen.JPEG || f.Size != (screen.Size{W: 640, H: 400}) {
			t.Fatalf("frame %d is a %v of %v, want a 640x400 JPEG", i, f.Format, f.Size)
		}
		colours[boxColour(t, f)] = true
		if i > 0 && at[i].Sub(at[i-1]) < screen.DefaultLiveInterval-time.Millisecond {
			t.Errorf("frames %d and %d came %v apart, less than the interval %v", i-1, i, at[i].Sub(at[i-1]), screen.DefaultLiveInterval)
		}
	}
	if len(colours) < 5 {
		t.Errorf("%d frames show %d colours of the box, want it changing", len(got), len(colours))
	}
}

// While a capture waits for an animation that a click started to end, the
// live view shows the animation (FrameControl mode: the settle's frames
// take the live frames; in Screencast mode a capture shows only its own
// screenshot); a second watcher is refused.
func TestWatchDuringCapture(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	if !d.frames {
		t.Skip("Screencast mode: the live view shows a capture by the capture's own screenshot, by design")
	}
	load(t, d, "live.html")
	w := watch(t, d)
	until(t, "three looks at the page", func() bool { return d.live.ticks.Load() >= 3 })

	err := d.Watch(t.Context(), screen.LiveOptions{Size: screen.Size{W: 1280, H: 800}}, func(screen.LiveFrame) {})
	if !errors.Is(err, errWatched) {
		t.Errorf("a second Watch = %v, want %v", err, errWatched)
	}

	n := w.count()
	do(t, d, kind(actions.Click, at(120, 65)))
	start := time.Now()
	shot := capture(t, d, screen.CaptureOptions{Size: screen.Size{W: 1280, H: 800}})
	end := time.Now()
	if shot.Frame.Settle.Waited < time.Second {
		t.Fatalf("the capture settled after %v, want it to wait for the 1.5 s animation", shot.Frame.Settle.Waited)
	}
	colours := map[[3]uint32]bool{}
	for _, f := range w.since(n) {
		if !f.Time.Before(start) && !f.Time.After(end) {
			colours[boxColour(t, f)] = true
		}
	}
	if len(colours) < 2 {
		t.Errorf("the live frames that came while the capture waited %v for the animation show %d colours of the box, want it changing",
			shot.Frame.Settle.Waited, len(colours))
	}
}

// Closing a watched display ends the watch with screen.ErrGone.
func TestWatchEndsWithTheDisplay(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "live.html")
	done := make(chan error, 1)
	go func() {
		done <- d.Watch(t.Context(), screen.LiveOptions{Size: screen.Size{W: 640, H: 400}}, func(screen.LiveFrame) {})
	}()
	until(t, "a look at the page", func() bool { return d.live.ticks.Load() >= 1 })
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, screen.ErrGone) {
			t.Errorf("Watch() after Close = %v, want screen.ErrGone", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Watch() did not end within 30s of Close")
	}
}
