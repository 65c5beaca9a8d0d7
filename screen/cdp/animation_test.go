package cdp

import (
	"context"
	"flag"
	"fmt"
	"image"
	"image/color"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/headlessexperimental"
	"github.com/chromedp/cdproto/runtime"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

var (
	animRuns = flag.Int("anim.runs", 2, "TestSettleAnimations: clicks per animation and duration (50 for the full check)")
	animMS   = flag.String("anim.ms", "150,600", "TestSettleAnimations: animation durations in ms, comma-separated (100,400,1000 for the full check)")
)

// The panels of testdata/animate.html, in CSS px: a click opens the green
// one (0 -> 300 px tall) and closes the blue one, or the other way round;
// ?how=canvas draws the green one on a canvas instead.
var (
	animGreen  = color.RGBA{40, 160, 40, 255}
	animBlue   = color.RGBA{40, 40, 200, 255}
	animWhite  = color.RGBA{255, 255, 255, 255}
	animRows   = []float64{105, 250, 395} // of the green panel; the blue one is 320 px lower
	animPanelX = 750.0
	animCanvas = 1000.0
)

// animDurations returns the animation durations -anim.ms names, in ms.
func animDurations(t *testing.T) []int {
	t.Helper()
	var durations []int
	for _, f := range strings.Split(*animMS, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			t.Fatalf("-anim.ms %q: want positive numbers", *animMS)
		}
		durations = append(durations, n)
	}
	return durations
}

// animCheck checks that img, a capture of the whole 1280x800 viewport,
// shows the panels at the end of their animation: open (the green one
// open, the blue one closed) or closed. It names every pixel that is not.
func animCheck(img image.Image, how string, open bool) error {
	b := img.Bounds()
	px := func(x, y float64) color.Color {
		return img.At(b.Min.X+int(x*float64(b.Dx())/1280), b.Min.Y+int(y*float64(b.Dy())/800))
	}
	type spot struct {
		x, y float64
		want color.RGBA
	}
	var spots []spot
	green, blue := animWhite, animBlue
	if open {
		green, blue = animGreen, animWhite
	}
	for _, y := range animRows {
		if how == "canvas" {
			spots = append(spots, spot{animCanvas, y, green})
			continue
		}
		spots = append(spots, spot{animPanelX, y, green}, spot{animPanelX, y + 320, blue})
	}
	var bad []string
	for _, s := range spots {
		if c := px(s.x, s.y); !near(c, s.want, 24) {
			bad = append(bad, fmt.Sprintf("(%g,%g) is %s, want %v", s.x, s.y, rgb(c), s.want))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("HALF-FINISHED: %s", strings.Join(bad, "; "))
	}
	return nil
}

// TestSettleAnimations clicks a button that starts an animation of a few
// hundred ms, driven by each means a page has (a jQuery-style accordion on
// a setInterval of 13 ms, a setTimeout chain, a requestAnimationFrame loop,
// a CSS transition with a delay, a CSS animation in steps, Web Animations,
// a canvas drawn by an interval, and an interval animation beside a poll
// that never ends), and checks the pixels of every capture after a click:
// the panels must be at the end of their animation, never half-way. In
// make test it runs 2 clicks per animation and duration; the full check is
//
//	SPOTTER_INTEGRATION=1 go test ./screen/cdp/ -run TestSettleAnimations -anim.runs 50 -anim.ms 100,400,1000 -timeout 60m
//
// (add SPOTTER_CDP_MODE=screencast for the other mode).
func TestSettleAnimations(t *testing.T) {
	integration(t)
	durations := animDurations(t)
	// The hostile variants run on a page that wraps the timer functions
	// and refuses its built-ins (Set, Map, Array.prototype.push, the array
	// iterator, performance.now, Number, String, Reflect.apply, Object.create,
	// MutationObserver's takeRecords, document.getAnimations; globalThis
	// replaced) to any script but its own: the timer script must neither
	// break its timers nor miss its animations, and may call none of them.
	for _, how := range []string{"interval", "chain", "raf", "css", "keyframes", "waapi", "canvas", "poll",
		"interval&hostile=1", "chain&hostile=1", "raf&hostile=1", "css&hostile=1"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			d := newDisplay(t, DisplayConfig{})
			for _, ms := range durations {
				load(t, d, fmt.Sprintf("animate.html?how=%s&ms=%d", how, ms))
				toggleRuns(t, d, fmt.Sprintf("%s %d ms", how, ms), how)
				if strings.Contains(how, "hostile") {
					if v := eval[[]string](t, d, "window.__violations"); len(v) > 0 {
						t.Errorf("%d ms: Spotter's scripts called what the page refuses them: %q", ms, v)
					}
				}
			}
		})
	}
}

// toggleRuns clicks the panels' button -anim.runs times on the page d
// shows, capturing after each click, and fails t for every capture that
// did not settle or shows the panels mid-way (animCheck with how); label
// names the page in what it says.
func toggleRuns(t *testing.T, d *Display, label, how string) {
	t.Helper()
	var waited []time.Duration
	half := 0
	open := false
	for i := range *animRuns {
		do(t, d, kind(actions.Click, at(200, 200)))
		open = !open
		shot := capture(t, d, screen.CaptureOptions{Format: screen.PNG})
		s := shot.Frame.Settle
		waited = append(waited, s.Waited)
		if s.TimedOut {
			t.Errorf("%s, click %d: Settle = %+v, want settled", label, i, s)
		}
		if err := animCheck(decode(t, shot), how, open); err != nil {
			half++
			t.Errorf("%s, click %d (settled in %v): %v", label, i, s.Waited, err)
		}
	}
	slices.Sort(waited)
	t.Logf("%s: %d of %d captures half-finished; settle p50 %v, max %v", label, half, *animRuns,
		waited[len(waited)/2].Round(time.Millisecond), waited[len(waited)-1].Round(time.Millisecond))
}

// TestSettleEndlessAnimation checks that a page whose script animation
// never ends is still captured, after the settle timeout, and that its
// Settle says why.
func TestSettleEndlessAnimation(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "animate.html?how=endless")
	do(t, d, kind(actions.Click, at(200, 200)))
	start := time.Now()
	shot := capture(t, d, screen.CaptureOptions{SettleTimeout: 500 * time.Millisecond})
	s := shot.Frame.Settle
	if took := time.Since(start); s.Waited < 500*time.Millisecond || s.Waited > 2*time.Second || took > 10*time.Second {
		t.Errorf("Capture with a 500ms settle timeout took %v, of which %v settling", took, s.Waited)
	}
	if !s.TimedOut || !strings.Contains(s.Reason, "animation") {
		t.Errorf("Capture().Frame.Settle = %+v, want TimedOut with a reason that names an animation", s)
	}
	if len(shot.Data) == 0 {
		t.Error("Capture() timed out without an image")
	}
}

// methodLog records the commands sent through a tab's session.
type methodLog struct {
	cdpproto.Session
	mu   sync.Mutex
	sent []string
}

func (l *methodLog) Call(ctx context.Context, method string, params, res any) error {
	name := method
	if p, ok := params.(headlessexperimental.BeginFrameParams); ok && p.Screenshot != nil {
		name += "+screenshot"
	}
	l.mu.Lock()
	l.sent = append(l.sent, name)
	l.mu.Unlock()
	return l.Session.Call(ctx, method, params, res)
}

func (l *methodLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sent
	l.sent = nil
	return s
}

// TestIdleCaptureCostsNoQuestion checks that captures of a page that got
// no input and drew nothing new encode no new image (FrameControl) and,
// from the second on, ask the page nothing (no Runtime.evaluate): the
// first must ask, as the frame after a screenshot always reports damage.
// A capture after a click does both, and shows the click's effect.
func TestIdleCaptureCostsNoQuestion(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "animate.html?how=interval&ms=100")
	o := screen.CaptureOptions{Format: screen.PNG}
	capture(t, d, o)
	log := &methodLog{Session: d.t}
	d.t = log
	defer func() { d.t = log.Session }()

	for i := range 3 {
		shot := capture(t, d, o)
		sent := log.take()
		if i > 0 && slices.Contains(sent, runtime.CommandEvaluate) {
			t.Errorf("idle Capture() %d sent %v, want no %s", i, sent, runtime.CommandEvaluate)
		}
		if d.frames && slices.Contains(sent, headlessexperimental.CommandBeginFrame+"+screenshot") {
			t.Errorf("idle Capture() %d sent %v, want no screenshot frame", i, sent)
		}
		if err := animCheck(decode(t, shot), "interval", false); err != nil {
			t.Errorf("idle Capture() %d: %v", i, err)
		}
	}

	do(t, d, kind(actions.Click, at(200, 200)))
	log.take()
	shot := capture(t, d, o)
	sent := log.take()
	if !slices.Contains(sent, runtime.CommandEvaluate) {
		t.Errorf("Capture() after a click sent %v, want a %s", sent, runtime.CommandEvaluate)
	}
	if d.frames && !slices.Contains(sent, headlessexperimental.CommandBeginFrame+"+screenshot") {
		t.Errorf("Capture() after a click sent %v, want a screenshot frame", sent)
	}
	if err := animCheck(decode(t, shot), "interval", true); err != nil {
		t.Errorf("Capture() after a click: %v", err)
	}
}

// TestKeptShotSeesScriptChange checks that a change a script makes while
// no input comes (a timer that recolours the panel) reaches the next
// capture, though the frame after the last screenshot reported damage
// anyway: the kept screenshot is not returned then.
func TestKeptShotSeesScriptChange(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "animate.html?how=interval&ms=100")
	o := screen.CaptureOptions{Format: screen.PNG}
	capture(t, d, o)
	// A change with no input, no request and no frame: the page's own
	// script, as a timer would run it.
	eval[int](t, d, `(document.getElementById("p2").firstChild.style.background = "rgb(220, 40, 40)", 0)`)
	shot := capture(t, d, o)
	if c := decode(t, shot).At(int(animPanelX), 600); !near(c, color.RGBA{220, 40, 40, 255}, 24) {
		t.Errorf("Capture() after a script recoloured the blue panel: (%g,600) is %s, want red", animPanelX, rgb(c))
	}
}
