package cdp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/headlessexperimental"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// frameTab is a frame-controlled tab: it answers beginFrame with the
// damage that damage says for each frame, and screenshots of size after
// empty ones. A mouseMoved waits for the next frame, as Chromium's does.
type frameTab struct {
	t      testing.TB
	damage func(n int) bool // whether frame n (from 0) draws something new
	hang   bool             // beginFrame never answers
	// stall, when not nil, holds up the first frame until it is closed;
	// meanwhile every other frame is refused as Chromium refuses it.
	stall    chan struct{}
	stalled  bool        // the first frame has begun
	hangEval bool        // Runtime.evaluate never answers
	empty    int         // screenshots that come back without data first
	size     screen.Size // of the screenshots

	mu     sync.Mutex
	frames int
	shots  int
	sent   []string
	moved  chan struct{} // closed by the frame after a mouseMoved
}

func (f *frameTab) Call(ctx context.Context, method string, params, res any) error {
	switch method {
	case headlessexperimental.CommandBeginFrame:
		if f.hang {
			<-ctx.Done()
			return ctx.Err()
		}
		p := params.(headlessexperimental.BeginFrameParams)
		r := res.(*headlessexperimental.BeginFrameResult)
		f.mu.Lock()
		if f.stall != nil {
			stall, first := f.stall, !f.stalled
			f.stalled = true
			if !first {
				select {
				case <-stall:
				default:
					f.mu.Unlock()
					return errors.New("Another frame is pending (-32000)")
				}
			} else {
				f.mu.Unlock()
				<-stall // Chromium answers it whatever the caller does
				f.mu.Lock()
			}
		}
		defer f.mu.Unlock()
		r.HasDamage = f.damage != nil && f.damage(f.frames)
		f.frames++
		if f.moved != nil {
			close(f.moved)
			f.moved = nil
		}
		if p.Screenshot != nil {
			f.shots++
			if f.shots > f.empty {
				r.ScreenshotData = encoded(f.t, screen.Format(p.Screenshot.Format), f.size.W, f.size.H)
			}
		}
		return nil
	case input.CommandDispatchMouseEvent:
		p := params.(input.DispatchMouseEventParams)
		f.mu.Lock()
		f.sent = append(f.sent, fmt.Sprintf("%s (%.4f,%.4f)", p.Type, p.X, p.Y))
		var wait chan struct{}
		if p.Type == input.DispatchMouseEventTypeMouseMoved {
			wait = make(chan struct{})
			f.moved = wait
		}
		f.mu.Unlock()
		if wait != nil {
			select {
			case <-wait:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	case page.CommandGetLayoutMetrics:
		return nil // no scroll
	case runtime.CommandEvaluate:
		if f.hangEval {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	return errors.New("unexpected " + method)
}

func (f *frameTab) Subscribe(string) (<-chan jsonv2.Value, func()) { return nil, func() {} }

func (f *frameTab) count() (frames, shots int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frames, f.shots
}

// frameDisplay is a unit display in FrameControl mode whose window already
// shows the whole viewport at scale.
func frameDisplay(tab *frameTab, scale float64) (*Display, *frameControl) {
	d := unitDisplay(tab, DisplayConfig{})
	// Frames run on goroutines of the display, which end with it.
	d.bg, d.bgCancel = context.WithCancel(context.Background())
	tab.t.Cleanup(func() {
		d.bgCancel()
		d.wg.Wait()
	})
	f := &frameControl{d: d, out: output{size: tab.size, scale: scale, zoom: 1}}
	d.r = f
	return d, f
}

// fullReq is the request of a capture of the whole 1280x800 viewport at
// size.
func fullReq(t *testing.T, d *Display, size screen.Size) captureReq {
	t.Helper()
	r, err := d.captureRequest(screen.CaptureOptions{Size: size})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestFrameSettle(t *testing.T) {
	url := "http://x/slow"
	tests := []struct {
		name        string
		timeout     time.Duration
		damage      func(n int) bool
		page        func(d *Display) // runs in the bubble before settle
		wantWaited  time.Duration
		wantFrames  [2]int // at least, at most
		wantTimeout bool
		wantReason  string
	}{
		{
			name:       "static page",
			timeout:    time.Second,
			damage:     func(n int) bool { return n < 2 },
			wantFrames: [2]int{3, 3},
		},
		{
			name:       "transition",
			timeout:    time.Second,
			damage:     func(n int) bool { return n < 20 },
			wantWaited: (20 - burstFrames) * frameInterval,
			wantFrames: [2]int{21, 21},
		},
		{
			name:        "endless animation",
			timeout:     500 * time.Millisecond,
			damage:      func(int) bool { return true },
			wantWaited:  500 * time.Millisecond,
			wantFrames:  [2]int{30, 36}, // paced, not a busy loop
			wantTimeout: true,
			wantReason:  "the page kept drawing new frames (an animation?) (",
		},
		{
			name:    "request finishes",
			timeout: time.Second,
			page: func(d *Display) {
				d.state.event(time.Now(), &network.EventRequestWillBeSent{RequestID: "1", Request: &network.Request{URL: url}})
				go func() {
					time.Sleep(300 * time.Millisecond)
					d.state.event(time.Now(), &network.EventLoadingFinished{RequestID: "1"})
				}()
			},
			// The first frame after the quiet window.
			wantWaited: 300*time.Millisecond + DefaultQuietWindow,
			wantFrames: [2]int{15, 25},
		},
		{
			name:    "request never finishes",
			timeout: 400 * time.Millisecond,
			page: func(d *Display) {
				d.state.event(time.Now(), &network.EventRequestWillBeSent{RequestID: "1", Request: &network.Request{URL: url}})
			},
			wantWaited:  400 * time.Millisecond,
			wantFrames:  [2]int{20, 26},
			wantTimeout: true,
			wantReason:  "1 network request still pending: " + url,
		},
		{
			name:    "no wait",
			timeout: -1,
			page: func(d *Display) {
				d.state.event(time.Now(), &page.EventFrameStartedLoading{FrameID: "main"})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tab := &frameTab{t: t, damage: tt.damage, size: screen.Size{W: 1280, H: 800}}
				d, f := frameDisplay(tab, 1)
				d.state.lastActivity = time.Time{}
				if tt.page != nil {
					tt.page(d)
				}
				got, _, err := f.settle(t.Context(), fullReq(t, d, screen.Size{}), tt.timeout)
				if err != nil {
					t.Fatalf("settle(%v) = %v", tt.timeout, err)
				}
				// Waited may overshoot by at most one frame's pacing.
				if got.Waited < tt.wantWaited || got.Waited > tt.wantWaited+frameInterval {
					t.Errorf("settle(%v).Waited = %v, want %v", tt.timeout, got.Waited, tt.wantWaited)
				}
				if got.TimedOut != tt.wantTimeout || !strings.HasPrefix(got.Reason, tt.wantReason) || (tt.wantReason == "") != (got.Reason == "") {
					t.Errorf("settle(%v) = %+v, want TimedOut %v, Reason starting %q", tt.timeout, got, tt.wantTimeout, tt.wantReason)
				}
				if frames, _ := tab.count(); frames < tt.wantFrames[0] || frames > tt.wantFrames[1] {
					t.Errorf("settle(%v) ran %d frames, want %d to %d", tt.timeout, frames, tt.wantFrames[0], tt.wantFrames[1])
				}
			})
		})
	}
}

// A dialog that opens while a frame waits ends the wait at once.
func TestFrameSettleDialog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tab := &frameTab{t: t, hang: true, size: screen.Size{W: 1280, H: 800}}
		d, f := frameDisplay(tab, 1)
		go func() {
			time.Sleep(50 * time.Millisecond)
			d.state.event(time.Now(), &page.EventJavascriptDialogOpening{Type: page.DialogTypeAlert, Message: "hi"})
		}()
		start := time.Now()
		_, _, err := f.settle(t.Context(), fullReq(t, d, screen.Size{}), time.Minute)
		if !errors.Is(err, ErrUnresponsive) || !strings.Contains(err.Error(), `alert dialog ("hi")`) {
			t.Errorf("settle with a dialog opening = %v, want ErrUnresponsive naming it", err)
		}
		if took := time.Since(start); took != 50*time.Millisecond {
			t.Errorf("settle with a dialog opening after 50ms returned after %v", took)
		}
	})
}

// A frame that a dialog cut short still runs in Chromium, which refuses
// every other frame of the tab until it ends ("Another frame is pending"):
// once the dialog is answered, the next frame waits for it instead.
func TestFrameAfterDialog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tab := &frameTab{t: t, stall: make(chan struct{}), size: screen.Size{W: 1280, H: 800}}
		d, f := frameDisplay(tab, 1)
		go func() {
			time.Sleep(50 * time.Millisecond)
			d.state.event(time.Now(), &page.EventJavascriptDialogOpening{Type: page.DialogTypeAlert, Message: "hi"})
		}()
		_, err := f.frame(t.Context(), nil)
		if !errors.Is(err, ErrUnresponsive) || !strings.Contains(err.Error(), `alert dialog ("hi")`) {
			t.Fatalf("frame() as a dialog opens = %v, want ErrUnresponsive naming the dialog", err)
		}
		d.state.event(time.Now(), &page.EventJavascriptDialogClosed{Result: true})
		go func() {
			time.Sleep(30 * time.Millisecond) // the page runs on, and the frame ends
			close(tab.stall)
		}()
		start := time.Now()
		if _, err := f.frame(t.Context(), nil); err != nil {
			t.Fatalf("frame() after the dialog = %v, want the frame once the cut-short one ended", err)
		}
		if took := time.Since(start); took != 30*time.Millisecond {
			t.Errorf("frame() after the dialog took %v, want 30ms (the wait for the earlier frame)", took)
		}
	})
}

// A frame without an answer while the page still answers is a window that
// stopped drawing (errWedged, which Capture answers by opening the page in
// a new window); while the page does not answer either, the page hangs.
// Either way the next frame says so at once instead of "Another frame is
// pending".
func TestFrameStalled(t *testing.T) {
	for _, tt := range []struct {
		name     string
		hangEval bool
		want     error
	}{
		{"window", false, errWedged},
		{"page", true, ErrUnresponsive},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tab := &frameTab{t: t, stall: make(chan struct{}), hangEval: tt.hangEval, size: screen.Size{W: 1280, H: 800}}
				d, f := frameDisplay(tab, 1)
				start := time.Now()
				_, err := f.frame(t.Context(), nil)
				if !errors.Is(err, tt.want) {
					t.Fatalf("frame() that never answers = %v, want %v", err, tt.want)
				}
				timeout := d.cfg.CommandTimeout
				if took := time.Since(start); took > timeout+time.Second {
					t.Errorf("frame() that never answers returned after %v, want the command timeout %v (and a second to ask the page)", took, timeout)
				}
				start = time.Now()
				_, err = f.frame(t.Context(), nil)
				if !errors.Is(err, tt.want) || strings.Contains(err.Error(), "Another frame") {
					t.Errorf("the next frame() = %v, want %v again", err, tt.want)
				}
				if took := time.Since(start); took > stallGrace+time.Second {
					t.Errorf("the next frame() took %v, want at most %v", took, stallGrace+time.Second)
				}
				close(tab.stall)
			})
		})
	}
}

// grab runs frames until a screenshot of the window's size comes back:
// past a burst it paces them, and it gives up only after maxEmptyShots
// frames and shotPatience, or, if every frame came back empty, after
// wedgePatience with errWedged (in a synctest bubble: the time is fake).
func TestFrameGrab(t *testing.T) {
	tests := []struct {
		name      string
		empty     int
		size      screen.Size
		wantShots int // 0: as many as shotPatience takes, at least maxEmptyShots
		wantErr   bool
	}{
		{"first frame", 0, screen.Size{W: 1024, H: 640}, 1, false},
		{"empty frames first", 3, screen.Size{W: 1024, H: 640}, 4, false},
		{"empty past the count", maxEmptyShots + 5, screen.Size{W: 1024, H: 640}, maxEmptyShots + 6, false},
		{"never", 1 << 20, screen.Size{W: 1024, H: 640}, 0, true},
		{"empty, then the old size", maxEmptyShots + 5, screen.Size{W: 512, H: 320}, 0, true},
		{"wrong size", 0, screen.Size{W: 512, H: 320}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tab := &frameTab{t: t, empty: tt.empty, size: tt.size}
				d, f := frameDisplay(tab, 0.8)
				f.out.size = screen.Size{W: 1024, H: 640}
				for _, format := range []screen.Format{screen.PNG, screen.JPEG} {
					tab.shots = 0
					r, err := d.captureRequest(screen.CaptureOptions{Size: screen.Size{W: 1024, H: 640}, Format: format})
					if err != nil {
						t.Fatal(err)
					}
					start := time.Now()
					data, err := f.grab(t.Context(), r, actions.Point{})
					took := time.Since(start)
					_, shots := tab.count()
					wedged := tt.empty > 1<<10 // every frame empty
					patience := shotPatience
					if wedged {
						patience = wedgePatience
					}
					switch {
					case tt.wantShots > 0 && shots != tt.wantShots:
						t.Errorf("grab(%s) ran %d screenshot frames, want %d", format, shots, tt.wantShots)
					case tt.wantShots == 0 && (shots < maxEmptyShots || took < patience || took > patience+time.Second):
						t.Errorf("grab(%s) gave up after %d frames in %v, want at least %d frames and %v", format, shots, took,
							maxEmptyShots, patience)
					}
					if got := errors.Is(err, errWedged); got != wedged {
						t.Errorf("grab(%s) = %v: wedged %v, want %v", format, err, got, wedged)
					}
					if tt.wantErr {
						if err == nil {
							t.Errorf("grab(%s) = %d bytes, want an error", format, len(data))
						}
						continue
					}
					if err != nil {
						t.Fatalf("grab(%s) = %v", format, err)
					}
					if got, size, err := imageSize(data); got != format || size != tt.size || err != nil {
						t.Errorf("grab(%s) = a %v %s (%v), want a %v %s", format, size, got, err, tt.size, format)
					}
				}
			})
		})
	}
}

// Mouse moves wait for a frame: Perform runs frames until they are
// answered, and scales CSS px to the window.
func TestFramePerform(t *testing.T) {
	tab := &frameTab{t: t, size: screen.Size{W: 1024, H: 640}}
	d, _ := frameDisplay(tab, 0.8)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Click, At: actions.Pt(100, 50), HasAt: true}})
	if err != nil {
		t.Fatalf("Perform(click) = %v", err)
	}
	// (100,50) CSS px, nudged by 1/256 px, times 0.8.
	want := []string{
		"mouseMoved (80.0031,40.0031)",
		"mousePressed (80.0031,40.0031)",
		"mouseReleased (80.0031,40.0031)",
	}
	if diff := cmp.Diff(want, tab.sent); diff != "" {
		t.Errorf("Perform(click at (100,50)) in a window scaled 0.8: events (-want +got):\n%s", diff)
	}
	if frames, _ := tab.count(); frames < 2 {
		t.Errorf("Perform(click) ran %d frames, want the move's and one after it", frames)
	}
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    Mode
		wantErr bool
	}{
		{"", ModeAuto, false},
		{"auto", ModeAuto, false},
		{"screencast", Screencast, false},
		{"Frame-Control", FrameControl, false},
		{"framecontrol", FrameControl, false},
		{"fast", ModeAuto, true},
	}
	for _, tt := range tests {
		got, err := ParseMode(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseMode(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err == nil && tt.in != "" {
			if back, err := ParseMode(got.String()); back != got || err != nil {
				t.Errorf("ParseMode(%v.String()) = %v, %v", got, back, err)
			}
		}
	}
	if got := Mode(9).String(); got != "Mode(9)" {
		t.Errorf("Mode(9).String() = %q", got)
	}
}

func TestFindBrowser(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"chromium", "chromium-headless-shell", "my-headless_shell"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	only := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "chromium"), filepath.Join(only, "chromium")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path     string // PATH
		mode     Mode
		exec     string
		wantMode Mode
		wantBin  string // base name
		wantErr  bool
	}{
		{dir, ModeAuto, "", FrameControl, "chromium-headless-shell", false},
		{dir, Screencast, "", Screencast, "chromium", false},
		{dir, FrameControl, "", FrameControl, "chromium-headless-shell", false},
		{only, ModeAuto, "", Screencast, "chromium", false},
		{only, FrameControl, "", FrameControl, "", true},
		{dir, ModeAuto, "chromium", Screencast, "chromium", false},
		{dir, ModeAuto, "my-headless_shell", FrameControl, "my-headless_shell", false},
		{dir, FrameControl, "chromium", FrameControl, "chromium", false}, // as told
		{dir, Mode(7), "", Mode(7), "", true},
	}
	for _, tt := range tests {
		t.Setenv("PATH", tt.path)
		mode, bin, err := findBrowser(tt.mode, tt.exec)
		if (err != nil) != tt.wantErr || (err == nil && (mode != tt.wantMode || filepath.Base(bin) != tt.wantBin)) {
			t.Errorf("findBrowser(%v, %q) with PATH %s = %v, %q, %v; want %v, %s, error %v",
				tt.mode, tt.exec, filepath.Base(tt.path), mode, bin, err, tt.wantMode, tt.wantBin, tt.wantErr)
		}
		if tt.mode == FrameControl && tt.wantErr && !errors.Is(err, ErrNoBrowser) {
			t.Errorf("findBrowser(FrameControl) without a headless shell = %v, want ErrNoBrowser", err)
		}
	}
}
