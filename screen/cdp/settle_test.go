package cdp

import (
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// openSwatch opens testdata/swatch.html?how (or another page with a #b
// button and the same swatch) and returns it as a toggleTab.
func openSwatch(t testing.TB, d *Display, page string) *toggleTab {
	t.Helper()
	load(t, d, page)
	c := eval[[]float64](t, d, `(r => [r.x + r.width/2, r.y + r.height/2])(document.getElementById("b").getBoundingClientRect())`)
	return &toggleTab{d: d, button: actions.Pt(c[0], c[1])}
}

// TestSettleAfterInput checks that the capture after a click shows the
// click's final effect when the page gets there late: after a short
// timer, a chain of animation frames, a fetch whose body the page never
// reads, or a fetch or timer with a spinning animation, each followed by a
// transition; and that a page which polls with a timer forever still
// settles.
func TestSettleAfterInput(t *testing.T) {
	for _, how := range []string{"timer", "raf", "fetch", "loading", "spin", "spinfade", "poll", "plain"} {
		t.Run(how, func(t *testing.T) {
			tt := openSwatch(t, newDisplay(t, DisplayConfig{DPR: 2}), "swatch.html?"+how)
			for i := range 4 {
				if err := tt.click(t.Context()); err != nil {
					t.Fatalf("click %d: Perform(click) = %v", i, err)
				}
				o := screen.CaptureOptions{Size: screen.Size{W: 1280, H: 800}, Format: screen.PNG}
				shot, err := tt.d.Capture(t.Context(), o)
				if err != nil {
					t.Fatalf("click %d: Capture() = %v", i, err)
				}
				if s := shot.Frame.Settle; s.TimedOut {
					t.Errorf("click %d: Capture().Frame.Settle = %+v, want settled", i, s)
				}
				if err := tt.check(shot.Data, o.Format); err != nil {
					t.Errorf("click %d (settled in %v): %v", i, shot.Frame.Settle.Waited, err)
				}
			}
		})
	}
}

// TestSettleWithCrossSiteFrame checks that a page with a cross-site
// (out-of-process) iframe settles, also when a click reloads the iframe.
func TestSettleWithCrossSiteFrame(t *testing.T) {
	tt := openSwatch(t, newDisplay(t, DisplayConfig{}), "oopif.html")
	for i := range 4 {
		if err := tt.click(t.Context()); err != nil {
			t.Fatalf("click %d: Perform(click) = %v", i, err)
		}
		shot := capture(t, tt.d, screen.CaptureOptions{Format: screen.PNG})
		if s := shot.Frame.Settle; s.TimedOut {
			t.Errorf("click %d: Capture().Frame.Settle = %+v, want settled", i, s)
		}
		if err := tt.check(shot.Data, screen.PNG); err != nil {
			t.Errorf("click %d: %v", i, err)
		}
	}
}

// TestWheelInScrollBox turns the wheel over the content of a scroll box,
// which then moves under the pointer, at both pixel ratios: the box
// scrolls, and the display keeps working.
func TestWheelInScrollBox(t *testing.T) {
	for _, page := range []string{"wheelbox.html", "wheelbox.html?div"} {
		for _, dpr := range []float64{1, 2} {
			d := newDisplay(t, DisplayConfig{DPR: dpr})
			load(t, d, page)
			// A scaled capture first, as a model's step would take.
			capture(t, d, screen.CaptureOptions{Size: screen.Size{W: 1024, H: 640}})
			do(t, d, kind(actions.Click, at(200, 140)))
			for i := range 3 {
				do(t, d, actions.Action{Kind: actions.Scroll, HasAt: true, At: actions.Pt(200, 140), DeltaY: 100})
				shot := capture(t, d, screen.CaptureOptions{Size: screen.Size{W: 1024, H: 640}})
				if shot.Frame.Settle.TimedOut {
					t.Errorf("%s dpr %g, wheel turn %d: Settle = %+v", page, dpr, i, shot.Frame.Settle)
				}
			}
			if got := eval[float64](t, d, `document.getElementById("box").scrollTop`); got != 300 {
				t.Errorf("%s dpr %g: the box's scrollTop after 3 wheel turns of 100 = %v, want 300", page, dpr, got)
			}
			// Items are 70 px apart, from 10 px below the box's top at 101.
			if got := eval[string](t, d, `document.querySelector("#box > :hover")?.textContent ?? "none"`); got != "Button 4" {
				t.Errorf("%s dpr %g: hovered after the turns: %q, want Button 4", page, dpr, got)
			}
		}
	}
}

// TestCaptureScroll checks the scroll offset of the capture after a click
// that scrolls the page, also on a page that lies about its viewport to
// its own scripts in every way it can; and that in FrameControl mode that
// capture asks nothing of its own for it (the settle's last answer told
// it), while a capture of a region still does.
func TestCaptureScroll(t *testing.T) {
	for _, url := range []string{"scrollview.html", "scrollview.html?hostile"} {
		t.Run(url, func(t *testing.T) {
			d := newDisplay(t, DisplayConfig{Viewport: screen.Size{W: 1280, H: 800}})
			load(t, d, url)
			full := screen.CaptureOptions{Size: screen.Size{W: 1280, H: 800}, Format: screen.PNG}
			region := screen.CaptureOptions{Region: actions.Rect{Min: actions.Pt(200, 100), Max: actions.Pt(840, 500)},
				Size: screen.Size{W: 640, H: 400}, Format: screen.PNG}
			for i := range 4 {
				o, wantAsked := full, map[bool]int{true: 0, false: 1}[d.frames]
				if i == 3 {
					o, wantAsked = region, 1
				}
				tab := d.t
				log := &methodLog{Session: tab}
				d.t = log
				do(t, d, actions.Action{Kind: actions.Click, HasAt: true, At: actions.Pt(100, 50)})
				shot, err := d.Capture(t.Context(), o)
				d.t = tab
				if err != nil {
					t.Fatalf("click %d: Capture() = %v", i, err)
				}
				m, err := cdp.Call(t.Context(), d.t, page.GetLayoutMetrics, cdp.Empty{})
				if err != nil {
					t.Fatal(err)
				}
				want := actions.Pt(m.CSSVisualViewport.PageX, m.CSSVisualViewport.PageY)
				if want != actions.Pt(float64(30*(i+1)), float64(700*(i+1))) {
					t.Fatalf("click %d: the page is scrolled to %v, want (%d,%d): the test page did not scroll", i, want, 30*(i+1), 700*(i+1))
				}
				if f := shot.Frame; f.Scroll != want || (f.Zoom != 0 && f.Zoom != 1) {
					t.Errorf("click %d: Frame.Scroll = %v, Zoom = %g, want %v and 1", i, f.Scroll, f.Zoom, want)
				}
				asked := 0
				for _, m := range log.take() {
					if m == page.CommandGetLayoutMetrics {
						asked++
					}
				}
				if asked != wantAsked {
					t.Errorf("click %d: the capture of %v called %s %d times, want %d (frame control: %v)", i, o.Region, page.CommandGetLayoutMetrics, asked, wantAsked, d.frames)
				}
			}
		})
	}
}
