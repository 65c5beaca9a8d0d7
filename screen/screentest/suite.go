package screentest

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// A Display is what the conformance suite checks: the harness's Display,
// restated so that backends and this package do not import the loop.
type Display interface {
	Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error)
	Perform(ctx context.Context, m screen.Mapped) error
}

// Options says what display the suite wants from a backend.
type Options struct {
	Viewport screen.Size // CSS pixels
	DPR      float64     // device pixels per CSS pixel
	// Pages is the base URL of the suite's test server, such as
	// "http://127.0.0.1:41234". The suite navigates a web display to pages
	// under it; a backend whose browser cannot reach 127.0.0.1 of the test
	// machine directly must forward it.
	Pages string
	// Other is a second origin of the same server ("http://localhost:PORT"),
	// where RunBrowser's cross-origin frames come from; a backend that
	// allows only some hosts allows it as it allows Pages.
	Other string
}

// An Opener opens a display for the suite with o's viewport and device
// pixel ratio, and closes it when t ends (t.Cleanup). It fails t if the
// display cannot be opened. It must not skip t: what a backend cannot do it
// leaves out of the capabilities it declares to Run, and the suite fails
// if a display it asked for was skipped.
type Opener func(t *testing.T, o Options) Display

// viewport is the CSS size of the displays the suite opens. It is not a
// common screen size, so that a backend that assumes one fails.
var viewport = screen.Size{W: 900, H: 600}

// Run checks that the displays open makes behave as the harness expects,
// given caps, the capabilities the backend declares (see Capability). It
// opens a display of 900x600 CSS pixels at device pixel ratio 1 and, with
// PixelRatio, another at 2, and checks:
//
//   - Capture: of every capture, full, scaled, JPEG or of a region (zoom),
//     the image is exactly CaptureOptions.Size (or the clip's CSS size), in
//     the format asked for; every Frame is consistent (Sent is the image's
//     size, the Clip lies inside the Viewport, Capture is the Clip in device
//     pixels, Time never goes back) and has an ID no other frame has.
//
// and, with Pages, on pages the suite serves itself:
//
//   - Capture, again: the page sees the viewport and pixel ratio asked for,
//     and each capture shows a known pattern where it is;
//   - Pointer: a click at a CSS point reports that point and shows a
//     marker at the same pixel of the next capture (and no longer at the
//     previous one); a click mapped from a scaled capture with Frame.Map
//     lands where the image showed; buttons, double and triple clicks,
//     modifiers held during a click, press-move-release and drag paths;
//   - Keys: chords with modifiers, named keys with the DOM key, code and
//     location of actions.LookupKey, held keys, and no modifier left down;
//   - Typing: shifted characters (with Shift held, as a keyboard does),
//     newlines and text no US key types;
//   - Scroll: the wheel scrolls the container under the pointer, and only
//     it, by about the distance asked for, and the next capture shows it;
//     Frame.Scroll is the page's scroll offset.
//
// Without Pages, the suite checks that the display refuses Navigate, and
// performs the actions of each declared input capability without an error
// (it cannot see their effect). Whatever the display, an action of a
// declared capability that fails, fails the suite, and an action of an
// undeclared one must fail with an error wrapping screen.ErrUnsupported.
// Nothing in the suite skips.
//
// A page reports its events by posting them to the suite's server, so the
// suite needs no way to run script in the page; it relies on Capture
// waiting for the network to be quiet, and reads the events as soon as a
// capture returns. Subtests share one page load per group, so they are
// meant to run in order.
func Run(t *testing.T, caps Capability, open Opener) {
	t.Helper()
	t.Logf("the display declares %s", caps)
	srv := startServer(t)
	for _, dpr := range []float64{1, 2} {
		name := fmt.Sprintf("DPR%g", dpr)
		if dpr != 1 && caps&PixelRatio == 0 {
			t.Logf("%s: not run, the display does not declare %s", name, PixelRatio)
			continue
		}
		var sub *testing.T
		t.Run(name, func(t *testing.T) {
			sub = t
			runAt(t, caps, dpr, srv, open, nil)
		})
		if sub != nil && sub.Skipped() {
			t.Errorf("%s was skipped: the suite does not skip; leave what the display cannot do out of the capabilities it declares", name)
		}
	}
}

// Groups of Run's checks, the names of the Outcomes RunAt reports.
var Groups = []string{"capture", "pointer", "keys", "typing", "scroll", "input"}

// RunAt is Run's checks of one display at device pixel ratio dpr (any,
// such as 1.5; a display that does not declare PixelRatio is opened at 1
// only), as subtests named after the groups of checks: capture, and on a
// display with Pages pointer, keys and typing (at DPR 1), and scroll, or
// without Pages input. report, if not nil, receives each group's Outcome;
// a group of a capability the display does not declare passes when the
// display refuses it, and carries its words.
func RunAt(t *testing.T, caps Capability, dpr float64, open Opener, report Reporter) {
	t.Helper()
	if dpr != 1 && caps&PixelRatio == 0 {
		t.Fatalf("RunAt(DPR %g) of a display that does not declare %s", dpr, PixelRatio)
	}
	runAt(t, caps, dpr, startServer(t), open, report)
}

func runAt(t *testing.T, caps Capability, dpr float64, srv *server, open Opener, report Reporter) {
	o := Options{Viewport: viewport, DPR: dpr, Pages: srv.url, Other: srv.other}
	c := &checker{d: open(t, o), o: o, caps: caps, srv: srv, ids: map[string]string{}}
	// A group is refused when the display does not declare its
	// capability (k; 0 for one every display has) and refuses it; the
	// refusal of a part of a declared one (Playwright's back button in
	// Pointer) leaves the group passed.
	group := func(name string, k Capability, check func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			c.refusal = ""
			if report != nil {
				defer func() {
					o := Outcome{Behaviour: strings.ToLower(name), Failed: t.Failed()}
					if caps&k != k {
						o.Refused = c.refusal
					}
					report(o)
				}()
			}
			check(t)
		})
	}
	web := caps&Pages != 0
	group("Capture", 0, c.captures(web))
	if !web {
		group("Input", 0, c.blindInput)
		return
	}
	group("Pointer", Pointer, c.pointer)
	if dpr == 1 { // keyboard input does not depend on the pixel ratio
		group("Keys", Keys, c.keys)
		group("Typing", Typing, c.typing)
	}
	group("Scroll", Scroll, c.scroll)
}

// checker runs the checks on one display. Its subtests run one at a time.
type checker struct {
	d    Display
	o    Options
	caps Capability
	srv  *server

	ids      map[string]string // frame IDs seen, and the capture that made each
	refusal  string            // the current group's refusal of an undeclared capability, if any
	lastTime time.Time         // Frame.Time of the latest capture
	page     string            // the page loaded: its file name
	session  string            // the session its events are reported under
	url      string            // its URL
}

// palette holds the colours of the test pages; the server hands it to them
// as palette.js. markerColor is the click marker of input.html, which no
// pattern uses.
var (
	palette = [...]color.RGBA{
		{255, 0, 0, 255},   // red
		{0, 200, 0, 255},   // green
		{0, 0, 255, 255},   // blue
		{255, 255, 0, 255}, // yellow
		{0, 255, 255, 255}, // cyan
		{255, 0, 255, 255}, // magenta
		{0, 0, 0, 255},     // black
	}
	markerColor = color.RGBA{255, 140, 0, 255}
	white       = color.RGBA{255, 255, 255, 255}
)

// Tolerances per colour channel: scaling and compression change the
// colours a little away from edges.
const (
	tolPNG  = 24
	tolJPEG = 64
)

// patternCell is the cell size of pattern.html, in CSS px.
const patternCell = 50

// patternColor is the colour of pattern.html at a CSS point.
func patternColor(p actions.Point) color.RGBA {
	i, j := int(math.Floor(p.X/patternCell)), int(math.Floor(p.Y/patternCell))
	return palette[(i+2*j)%len(palette)]
}

// Layout of input.html, in CSS px of the page (before any scrolling).
var (
	boxRect   = actions.Rect{Min: actions.Pt(600, 50), Max: actions.Pt(850, 250)}
	railX     = 880.0 // the middle of the rail, a column of 100 px bands
	textPoint = actions.Pt(250, 460)
	keysPoint = actions.Pt(575, 450)
)

const (
	boxCell  = 100 // cells of the box's content
	railBand = 100
)

// boxColor is the colour of the box's content at a point of the content.
func boxColor(p actions.Point) color.RGBA {
	i, j := int(math.Floor(p.X/boxCell)), int(math.Floor(p.Y/boxCell))
	return palette[(i+3*j)%len(palette)]
}

func railColor(pageY float64) color.RGBA {
	return palette[int(math.Floor(pageY/railBand))%len(palette)]
}

// captures checks image sizes, formats and Frame fields of captures of
// every shape and, on a web display, that they show pattern.html where it
// is: full, scaled, JPEG and region (zoom) captures. It also checks that
// the page sees the viewport and pixel ratio asked for.
func (c *checker) captures(web bool) func(t *testing.T) {
	return func(t *testing.T) {
		vp := c.o.Viewport
		if web {
			load := c.load(t, "pattern.html")
			if load.W != vp.W || load.H != vp.H || load.DPR != c.o.DPR {
				t.Errorf("pattern.html sees a %dx%d viewport at devicePixelRatio %g, want %dx%d at %g",
					load.W, load.H, load.DPR, vp.W, vp.H, c.o.DPR)
			}
		}
		full := actions.Rect{Max: actions.Pt(float64(vp.W), float64(vp.H))}
		zoom := actions.Rect{Min: actions.Pt(130, 85), Max: actions.Pt(330, 235)}
		tests := []struct {
			name string
			o    screen.CaptureOptions
			tol  int // of the pattern's colours; 0: the image is too small to check
		}{
			{"viewport", screen.CaptureOptions{}, tolPNG},
			{"half", screen.CaptureOptions{Size: screen.Size{W: vp.W / 2, H: vp.H / 2}}, tolPNG},
			{"0.8", screen.CaptureOptions{Size: screen.Size{W: vp.W * 4 / 5, H: vp.H * 4 / 5}}, tolPNG},
			{"tiny", screen.CaptureOptions{Size: screen.Size{W: vp.W / 10, H: vp.H / 10}}, 0},
			{"jpeg", screen.CaptureOptions{Size: screen.Size{W: vp.W * 4 / 5, H: vp.H * 4 / 5}, Format: screen.JPEG, Quality: 80}, tolJPEG},
			{"png", screen.CaptureOptions{Format: screen.PNG, Size: screen.Size{W: vp.W / 2, H: vp.H / 2}}, tolPNG},
			{"zoom", screen.CaptureOptions{Region: zoom}, tolPNG},
			{"zoom device px", screen.CaptureOptions{Region: zoom, Size: c.deviceSize(zoom)}, tolPNG},
			{"zoom enlarged", screen.CaptureOptions{Region: zoom, Size: screen.Size{W: 800, H: 600}}, tolPNG},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				shot, img := c.capture(t, tt.o)
				if !web || tt.tol == 0 {
					return
				}
				clip := tt.o.Region
				if clip.Empty() {
					clip = full
				}
				checkPattern(t, fmt.Sprintf("Capture(%s)", describeOptions(tt.o)), img, clip, tt.tol, tt.o.Format == screen.JPEG)
				if shot.Frame.Scroll != (actions.Point{}) {
					t.Errorf("Capture(%s) of a page that cannot scroll: Frame.Scroll = %v, want (0,0)", describeOptions(tt.o), shot.Frame.Scroll)
				}
			})
		}
	}
}

// deviceSize is the size of r in device pixels.
func (c *checker) deviceSize(r actions.Rect) screen.Size {
	return screen.Size{W: round(r.Dx() * c.o.DPR), H: round(r.Dy() * c.o.DPR)}
}

// checkPattern compares img, a capture of clip (CSS px) of pattern.html,
// with the pattern: at the centre of each cell and, unless centresOnly, a
// few pixels inside each cell edge, and at the image's corners.
func checkPattern(t *testing.T, what string, img image.Image, clip actions.Rect, tol int, centresOnly bool) {
	t.Helper()
	b := img.Bounds()
	sx, sy := float64(b.Dx())/clip.Dx(), float64(b.Dy())/clip.Dy()
	// A probe stays this far (CSS px) from cell edges, so that neither
	// scaling nor the image's own pixel grid blends colours into it.
	margin := max(4, 3/min(sx, sy))
	var probes []actions.Point
	offsets := []float64{patternCell / 2}
	if !centresOnly {
		offsets = append(offsets, margin, patternCell-margin)
	}
	for y := math.Floor(clip.Min.Y/patternCell) * patternCell; y < clip.Max.Y; y += patternCell {
		for x := math.Floor(clip.Min.X/patternCell) * patternCell; x < clip.Max.X; x += patternCell {
			for _, ox := range offsets {
				for _, oy := range offsets {
					probes = append(probes, actions.Pt(x+ox, y+oy))
				}
			}
		}
	}
	// The image's corner pixels, where they lie well inside a cell.
	for _, px := range []image.Point{{0, 0}, {b.Dx() - 1, 0}, {0, b.Dy() - 1}, {b.Dx() - 1, b.Dy() - 1}} {
		p := actions.Pt(clip.Min.X+(float64(px.X)+0.5)/sx, clip.Min.Y+(float64(px.Y)+0.5)/sy)
		if inCell(p.X, patternCell, margin) && inCell(p.Y, patternCell, margin) {
			probes = append(probes, p)
		}
	}
	var bad []string
	n := 0
	for _, p := range probes {
		if p.X < clip.Min.X+0.5/sx || p.Y < clip.Min.Y+0.5/sy || p.X >= clip.Max.X-0.5/sx || p.Y >= clip.Max.Y-0.5/sy {
			continue // outside the clip, or on its last half pixel
		}
		n++
		ix := b.Min.X + int(math.Floor((p.X-clip.Min.X)*sx))
		iy := b.Min.Y + int(math.Floor((p.Y-clip.Min.Y)*sy))
		want := patternColor(p)
		if got := img.At(ix, iy); !near(got, want, tol) {
			bad = append(bad, fmt.Sprintf("pixel (%d,%d) (CSS %v) = %s, want %s", ix, iy, p, rgb(got), rgb(want)))
		}
	}
	if n == 0 {
		t.Fatalf("%s: no pixel to probe in a %v image of %v", what, b.Size(), clip)
	}
	if len(bad) > 0 {
		const show = 6
		more := ""
		if len(bad) > show {
			more = fmt.Sprintf("\n... and %d more", len(bad)-show)
			bad = bad[:show]
		}
		t.Errorf("%s: %d of %d probes differ from the pattern:\n%s%s", what, len(bad), n, strings.Join(bad, "\n"), more)
	}
}

// inCell reports whether v is at least margin away from the edges of the
// cells of size cell.
func inCell(v, cell, margin float64) bool {
	r := math.Mod(v, cell)
	return r >= margin && r <= cell-margin
}

// pointer checks mouse input on input.html.
func (c *checker) pointer(t *testing.T) {
	c.load(t, "input.html")
	if !c.needs(t, Pointer) {
		return
	}
	t.Run("click lands on the pixel", c.clickLandsOnPixel)
	t.Run("click mapped from a scaled capture", c.clickMappedFromScaledCapture)
	t.Run("buttons", c.clickButtons)
	t.Run("multiple clicks", c.multipleClicks)
	t.Run("modifiers", c.clickModifiers)
	t.Run("press move release", c.pressMoveRelease)
	t.Run("drag path", c.dragPath)
}

// clickLandsOnPixel checks that clicks land on the pixels they name, inside
// the viewport and at its corners, as the events and the capture's marker
// show.
func (c *checker) clickLandsOnPixel(t *testing.T) {
	vp := c.o.Viewport
	points := []actions.Point{{X: 37, Y: 211}, {X: 0, Y: 0}, {X: 450, Y: 300}, {X: float64(vp.W - 1), Y: float64(vp.H - 1)}}
	var prev *actions.Point
	for _, p := range points {
		c.do(t, click(p))
		shot, img := c.capture(t, screen.CaptureOptions{})
		got := only(c.events(t), "mousedown", "mouseup", "click")
		want := []event{
			{Type: "mousedown", X: p.X, Y: p.Y, Buttons: 1, Detail: 1},
			{Type: "mouseup", X: p.X, Y: p.Y, Detail: 1},
			{Type: "click", X: p.X, Y: p.Y, Detail: 1},
		}
		if diff := cmp.Diff(want, mouseFields(got)); diff != "" {
			t.Errorf("Perform(click at %v): events (-want +got):\n%s", p, diff)
		}
		// The capture shows the marker at the clicked pixel, and no
		// longer where the previous click put it.
		c.checkPixel(t, fmt.Sprintf("capture after a click at %v", p), shot, img, p, markerColor, tolPNG)
		if prev != nil {
			c.checkPixel(t, fmt.Sprintf("capture after a click at %v, where the previous click was", p), shot, img, *prev, white, tolPNG)
		}
		prev = &p
	}
}

// clickMappedFromScaledCapture checks a click a model made on a capture
// scaled to 0.8: Frame.Map maps it back to the viewport, and it lands there.
func (c *checker) clickMappedFromScaledCapture(t *testing.T) {
	vp := c.o.Viewport
	size := screen.Size{W: vp.W * 4 / 5, H: vp.H * 4 / 5}
	shot, _ := c.capture(t, screen.CaptureOptions{Size: size})
	c.events(t)
	imgPt := actions.Pt(300, 180) // a model's click on the 0.8 image
	m, err := shot.Frame.Map(actions.Action{Kind: actions.Click, At: imgPt, HasAt: true}, screen.Image)
	if err != nil {
		t.Fatalf("Frame.Map(click at %v) = %v", imgPt, err)
	}
	want := actions.Pt((imgPt.X+0.5)/0.8, (imgPt.Y+0.5)/0.8)
	if math.Abs(m.At.X-want.X) > 1e-9 || math.Abs(m.At.Y-want.Y) > 1e-9 {
		t.Fatalf("Frame.Map(click at %v) of frame %+v = %v, want %v", imgPt, shot.Frame, m.At, want)
	}
	c.perform(t, m)
	after, img := c.capture(t, screen.CaptureOptions{Size: size})
	clicks := only(c.events(t), "click")
	if len(clicks) != 1 || math.Abs(clicks[0].X-want.X) > 1 || math.Abs(clicks[0].Y-want.Y) > 1 {
		t.Errorf("Perform(click mapped to %v): click events %+v, want one within 1 px of it", m.At, clicks)
	}
	c.checkPixel(t, "scaled capture after the mapped click", after, img, want, markerColor, tolPNG)
}

// clickButtons checks a click with each mouse button the display declares
// (an undeclared one must be refused): the DOM's button and buttons.
func (c *checker) clickButtons(t *testing.T) {
	tests := []struct {
		button  actions.Button
		dom     int // MouseEvent.button
		buttons int // MouseEvent.buttons while pressed
	}{
		{actions.Left, 0, 1},
		{actions.Right, 2, 2},
		{actions.Middle, 1, 4},
		{actions.Back, 3, 8},
		{actions.Forward, 4, 16},
	}
	for _, tt := range tests {
		t.Run(tt.button.String(), func(t *testing.T) {
			p := actions.Pt(200, 250)
			a := click(p)
			a.Button = tt.button
			if !c.needs(t, capabilityOf(a), a) {
				return
			}
			c.do(t, a)
			c.settle(t)
			got := mouseFields(only(c.events(t), "mousedown", "mouseup"))
			want := []event{
				{Type: "mousedown", X: p.X, Y: p.Y, Button: tt.dom, Buttons: tt.buttons, Detail: 1},
				{Type: "mouseup", X: p.X, Y: p.Y, Button: tt.dom, Detail: 1},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Perform(%s click at %v): events (-want +got):\n%s", tt.button, p, diff)
			}
		})
	}
}

// multipleClicks checks double and triple clicks: each press's detail (click
// count) and the dblclick event, all at the point.
func (c *checker) multipleClicks(t *testing.T) {
	type click struct {
		Type   string
		Detail int
	}
	tests := []struct {
		kind actions.Kind
		at   actions.Point
		want []click
	}{
		{actions.DoubleClick, actions.Pt(120, 120), []click{
			{"mousedown", 1}, {"mouseup", 1}, {"click", 1},
			{"mousedown", 2}, {"mouseup", 2}, {"click", 2}, {"dblclick", 2},
		}},
		{actions.TripleClick, actions.Pt(320, 140), []click{
			{"mousedown", 1}, {"mouseup", 1}, {"click", 1},
			{"mousedown", 2}, {"mouseup", 2}, {"click", 2}, {"dblclick", 2},
			{"mousedown", 3}, {"mouseup", 3}, {"click", 3},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.kind.String(), func(t *testing.T) {
			c.do(t, actions.Action{Kind: tt.kind, At: tt.at, HasAt: true})
			c.settle(t)
			var got []click
			for _, e := range only(c.events(t), "mousedown", "mouseup", "click", "dblclick") {
				if e.X != tt.at.X || e.Y != tt.at.Y {
					t.Errorf("Perform(%s at %v): %s at (%g,%g)", tt.kind, tt.at, e.Type, e.X, e.Y)
				}
				got = append(got, click{e.Type, e.Detail})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Perform(%s at %v): events (-want +got):\n%s", tt.kind, tt.at, diff)
			}
		})
	}
}

// clickModifiers checks a click with Control+Shift held, and that they are
// released after it.
func (c *checker) clickModifiers(t *testing.T) {
	p := actions.Pt(150, 80)
	a := click(p)
	a.Modifiers = actions.Chord{actions.Control, actions.Shift}
	c.do(t, a)
	c.settle(t)
	type mods struct {
		Type                   string
		Shift, Ctrl, Alt, Meta bool
	}
	var got []mods
	for _, e := range only(c.events(t), "mousedown", "mouseup", "click") {
		got = append(got, mods{e.Type, e.Shift, e.Ctrl, e.Alt, e.Meta})
	}
	want := []mods{{"mousedown", true, true, false, false}, {"mouseup", true, true, false, false}, {"click", true, true, false, false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Perform(click at %v with Control+Shift held): events (-want +got):\n%s", p, diff)
	}
	// The modifiers were released: a plain click has none.
	c.do(t, click(p))
	c.settle(t)
	for _, e := range only(c.events(t), "mousedown", "mouseup", "click") {
		if e.Shift || e.Ctrl || e.Alt || e.Meta {
			t.Errorf("Perform(click at %v) after a click with Control+Shift: %s has modifiers %+v, want none", p, e.Type, e)
		}
	}
}

// pressMoveRelease checks mouse_down, move and mouse_up: the button is held
// during the move, and the release is where the pointer is.
func (c *checker) pressMoveRelease(t *testing.T) {
	down, to := actions.Pt(100, 150), actions.Pt(160, 190)
	c.do(t, actions.Action{Kind: actions.MouseDown, At: down, HasAt: true})
	c.do(t, actions.Action{Kind: actions.Move, At: to, HasAt: true})
	c.do(t, actions.Action{Kind: actions.MouseUp}) // at the pointer
	c.settle(t)
	evs := only(c.events(t), "mousedown", "mousemove", "mouseup")
	// Moves before the press bring the pointer to it.
	for len(evs) > 0 && evs[0].Type == "mousemove" {
		evs = evs[1:]
	}
	want := []event{
		{Type: "mousedown", X: down.X, Y: down.Y, Buttons: 1, Detail: 1},
		{Type: "mousemove", X: to.X, Y: to.Y, Buttons: 1},
		{Type: "mouseup", X: to.X, Y: to.Y, Detail: 1},
	}
	got := mouseFields(evs)
	// Backends may move in steps: keep only the last move.
	got = slices.DeleteFunc(got, func(e event) bool { return e.Type == "mousemove" && (e.X != to.X || e.Y != to.Y) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mouse_down at %v, move to %v, mouse_up: events (-want +got):\n%s", down, to, diff)
	}
}

// dragPath checks a drag along a path: a press at its start, moves with the
// button held through every point in order, and a release at its end.
func (c *checker) dragPath(t *testing.T) {
	path := []actions.Point{{X: 120, Y: 330}, {X: 300, Y: 330}, {X: 300, Y: 380}, {X: 180, Y: 360}}
	c.do(t, actions.Action{Kind: actions.Drag, Path: path})
	c.settle(t)
	evs := only(c.events(t), "mousedown", "mousemove", "mouseup")
	for len(evs) > 0 && evs[0].Type == "mousemove" {
		evs = evs[1:]
	}
	if len(evs) < 2 {
		t.Fatalf("Perform(drag %v): events %+v, want a press, moves and a release", path, evs)
	}
	first, last := evs[0], evs[len(evs)-1]
	if first.Type != "mousedown" || first.X != path[0].X || first.Y != path[0].Y || first.Buttons != 1 {
		t.Errorf("Perform(drag %v) starts with %+v, want a left mousedown at %v", path, first, path[0])
	}
	end := path[len(path)-1]
	if last.Type != "mouseup" || last.X != end.X || last.Y != end.Y {
		t.Errorf("Perform(drag %v) ends with %+v, want mouseup at %v", path, last, end)
	}
	// Between press and release: only moves, with the button held,
	// passing through every point of the path in order.
	next := 1
	for _, e := range evs[1 : len(evs)-1] {
		if e.Type != "mousemove" || e.Buttons != 1 {
			t.Errorf("Perform(drag %v): %s with buttons %d between press and release, want only moves with the left button held", path, e.Type, e.Buttons)
			continue
		}
		if next < len(path) && e.X == path[next].X && e.Y == path[next].Y {
			next++
		}
	}
	if next < len(path) {
		t.Errorf("Perform(drag %v): the moves did not pass through %v (in order)", path, path[next])
	}
}

// keys checks Keypress and HoldKey on input.html, with the focus on #keys.
func (c *checker) keys(t *testing.T) {
	c.load(t, "input.html")
	if !c.needs(t, Keys) {
		return
	}
	c.do(t, click(keysPoint))
	c.settle(t)
	c.events(t)

	t.Run("chord", func(t *testing.T) {
		chord := actions.Chord{actions.Control, actions.Shift, "k"}
		c.do(t, actions.Action{Kind: actions.Keypress, Keys: chord})
		c.settle(t)
		want := []keyEvent{
			{Type: "keydown", Key: "Control", Code: "ControlLeft", Ctrl: true, Location: 1},
			{Type: "keydown", Key: "Shift", Code: "ShiftLeft", Ctrl: true, Shift: true, Location: 1},
			{Type: "keydown", Key: "K", Code: "KeyK", Ctrl: true, Shift: true},
			{Type: "keyup", Key: "K", Code: "KeyK", Ctrl: true, Shift: true},
			{Type: "keyup", Key: "Shift", Code: "ShiftLeft", Ctrl: true, Location: 1},
			{Type: "keyup", Key: "Control", Code: "ControlLeft", Location: 1},
		}
		if diff := cmp.Diff(want, keyEvents(c.events(t), "keys")); diff != "" {
			t.Errorf("Perform(keypress %v) events (-want +got):\n%s", chord, diff)
		}
	})

	t.Run("shifted main key", func(t *testing.T) {
		chord := actions.Chord{actions.Shift, "1"}
		c.do(t, actions.Action{Kind: actions.Keypress, Keys: chord})
		c.settle(t)
		want := []keyEvent{
			{Type: "keydown", Key: "Shift", Code: "ShiftLeft", Shift: true, Location: 1},
			{Type: "keydown", Key: "!", Code: "Digit1", Shift: true},
			{Type: "keyup", Key: "!", Code: "Digit1", Shift: true},
			{Type: "keyup", Key: "Shift", Code: "ShiftLeft", Location: 1},
		}
		if diff := cmp.Diff(want, keyEvents(c.events(t), "keys")); diff != "" {
			t.Errorf("Perform(keypress %v) events (-want +got):\n%s", chord, diff)
		}
	})

	t.Run("named keys", func(t *testing.T) {
		// One settle for all keys. The keypad's keys are left out unless
		// the display declares Keypad, and then must be refused.
		var want []keyEvent
		for _, k := range []actions.Key{"Enter", "Escape", "Space", "Tab", "Backspace", "ArrowLeft", "PageDown", "Home", "F2", "Numpad5", "NumpadAdd", "a", "/"} {
			info, ok := actions.LookupKey(k)
			if !ok {
				t.Fatalf("actions.LookupKey(%q) = false", k)
			}
			a := actions.Action{Kind: actions.Keypress, Keys: actions.Chord{k}}
			if !c.needs(t, capabilityOf(a), a) {
				continue
			}
			c.do(t, a)
			want = append(want,
				keyEvent{Type: "keydown", Key: info.DOMKey, Code: info.Code, Location: info.Location},
				keyEvent{Type: "keyup", Key: info.DOMKey, Code: info.Code, Location: info.Location})
		}
		c.settle(t)
		if diff := cmp.Diff(want, keyEvents(c.events(t), "keys")); diff != "" {
			t.Errorf("Perform(keypress) of named keys, one after the other: events (-want +got):\n%s", diff)
		}
	})

	t.Run("hold", func(t *testing.T) {
		const hold = 150 * time.Millisecond
		start := time.Now()
		c.do(t, actions.Action{Kind: actions.HoldKey, Keys: actions.Chord{actions.Shift}, Duration: hold})
		if held := time.Since(start); held < hold {
			t.Errorf("Perform(hold_key Shift for %v) returned after %v", hold, held)
		}
		c.settle(t)
		want := []keyEvent{
			{Type: "keydown", Key: "Shift", Code: "ShiftLeft", Shift: true, Location: 1},
			{Type: "keyup", Key: "Shift", Code: "ShiftLeft", Location: 1},
		}
		if diff := cmp.Diff(want, keyEvents(c.events(t), "keys")); diff != "" {
			t.Errorf("Perform(hold_key Shift) events (-want +got):\n%s", diff)
		}
	})

	t.Run("no modifier left down", func(t *testing.T) {
		c.do(t, click(keysPoint))
		c.settle(t)
		for _, e := range only(c.events(t), "mousedown", "mouseup", "click") {
			if e.Shift || e.Ctrl || e.Alt || e.Meta {
				t.Errorf("a click after the key checks: %s has modifiers (shift %v, ctrl %v, alt %v, meta %v), want none",
					e.Type, e.Shift, e.Ctrl, e.Alt, e.Meta)
			}
		}
	})
}

// typing checks Type into the text area of input.html.
func (c *checker) typing(t *testing.T) {
	c.load(t, "input.html")
	if !c.needs(t, Typing) {
		return
	}
	c.do(t, click(textPoint))
	c.settle(t)
	if clicks := only(c.events(t), "click"); len(clicks) != 1 || clicks[0].Target != "text" {
		t.Fatalf("Perform(click at %v): click events %+v, want one on the text area", textPoint, clicks)
	}
	value := ""
	for _, text := range []string{
		"Hello, World! ~{}|<>?_+",
		"\nline 2: a-z 0-9 `[]\\;',./",
		" café — 日本語 ✓ 😀",
	} {
		c.do(t, actions.Action{Kind: actions.Type, Text: text})
		c.settle(t)
		value += text
		evs := c.events(t)
		inputs := only(evs, "input")
		if len(inputs) == 0 || inputs[len(inputs)-1].Value != value {
			got := "no input event"
			if len(inputs) > 0 {
				got = fmt.Sprintf("%q", inputs[len(inputs)-1].Value)
			}
			t.Errorf("Perform(type %q): the text area holds %s, want %q", text, got, value)
		}
		// Every character a US key types comes as that key, with Shift
		// held for the shifted ones.
		type key struct {
			Key   string
			Shift bool
		}
		var want, got []key
		for _, r := range text {
			if info, ok := actions.KeyForRune(r); ok {
				want = append(want, key{info.DOMKey, info.Shift})
			}
		}
		for _, e := range only(evs, "keydown") {
			if k := actions.Key(e.Key); !k.IsModifier() {
				got = append(got, key{e.Key, e.Shift})
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Perform(type %q): keydown events (-want +got):\n%s", text, diff)
		}
	}
}

// scroll checks that the wheel scrolls what is under the pointer.
func (c *checker) scroll(t *testing.T) {
	c.load(t, "input.html")
	if !c.needs(t, Scroll) {
		return
	}
	var state event // the latest scroll offsets the page reported
	// scrolled performs a scroll and returns the capture after it and the
	// page's scroll offsets.
	scrolled := func(t *testing.T, at actions.Point, dx, dy float64) (screen.Shot, image.Image, event) {
		t.Helper()
		c.do(t, actions.Action{Kind: actions.Scroll, At: at, HasAt: true, DeltaX: dx, DeltaY: dy})
		shot, img := c.capture(t, screen.CaptureOptions{})
		evs := c.events(t)
		if len(evs) > 0 {
			state = evs[len(evs)-1]
		}
		wheels := only(evs, "wheel")
		if len(wheels) == 0 || wheels[0].X != at.X || wheels[0].Y != at.Y {
			t.Errorf("Perform(scroll at %v by (%g,%g)): wheel events %+v, want them at %v", at, dx, dy, wheels, at)
		}
		return shot, img, state
	}
	// about reports whether a scroll moved by about want: in its
	// direction, by half to one and a half times its distance (a desktop
	// scrolls in wheel clicks).
	about := func(got, want float64) bool {
		return math.Abs(got-want) <= math.Abs(want)/2
	}
	inBox := actions.Pt((boxRect.Min.X+boxRect.Max.X)/2, (boxRect.Min.Y+boxRect.Max.Y)/2)
	probe := actions.Pt(boxRect.Min.X+10, boxRect.Min.Y+10) // inside the box, near its top left

	t.Run("inner container", func(t *testing.T) {
		shot, img, s := scrolled(t, inBox, 0, 200)
		if !about(s.BoxTop, 200) || s.BoxLeft != 0 || s.ScrollX != 0 || s.ScrollY != 0 {
			t.Errorf("Perform(scroll at %v by (0,200)) over the box: box scrolled to (%g,%g), page to (%g,%g); want the box at about (0,200), the page at (0,0)",
				inBox, s.BoxLeft, s.BoxTop, s.ScrollX, s.ScrollY)
		}
		want := boxColor(actions.Pt(probe.X-boxRect.Min.X+s.BoxLeft, probe.Y-boxRect.Min.Y+s.BoxTop))
		c.checkPixel(t, "capture after scrolling the box", shot, img, probe, want, tolPNG)
		if shot.Frame.Scroll != (actions.Point{}) {
			t.Errorf("after scrolling only the box: Frame.Scroll = %v, want (0,0)", shot.Frame.Scroll)
		}

		top := s.BoxTop
		shot, img, s = scrolled(t, inBox, 100, 0)
		if !about(s.BoxLeft, 100) || s.BoxTop != top || s.ScrollX != 0 || s.ScrollY != 0 {
			t.Errorf("Perform(scroll at %v by (100,0)) over the box: box scrolled to (%g,%g), page to (%g,%g); want the box at about (100,%g), the page at (0,0)",
				inBox, s.BoxLeft, s.BoxTop, s.ScrollX, s.ScrollY, top)
		}
		want = boxColor(actions.Pt(probe.X-boxRect.Min.X+s.BoxLeft, probe.Y-boxRect.Min.Y+s.BoxTop))
		c.checkPixel(t, "capture after scrolling the box sideways", shot, img, probe, want, tolPNG)
	})

	t.Run("page", func(t *testing.T) {
		at := actions.Pt(300, 250)
		box := actions.Pt(state.BoxLeft, state.BoxTop)
		shot, img, s := scrolled(t, at, 0, 300)
		if !about(s.ScrollY, 300) || s.ScrollX != 0 || s.BoxLeft != box.X || s.BoxTop != box.Y {
			t.Errorf("Perform(scroll at %v by (0,300)) outside the box: page scrolled to (%g,%g), box to (%g,%g); want the page at about (0,300), the box still at %v",
				at, s.ScrollX, s.ScrollY, s.BoxLeft, s.BoxTop, box)
		}
		if got, want := shot.Frame.Scroll, actions.Pt(s.ScrollX, s.ScrollY); math.Abs(got.X-want.X) > 1 || math.Abs(got.Y-want.Y) > 1 {
			t.Errorf("after scrolling the page: Frame.Scroll = %v, want the page's offset %v", got, want)
		}
		p := actions.Pt(railX, 10)
		c.checkPixel(t, "capture after scrolling the page", shot, img, p, railColor(p.Y+s.ScrollY), tolPNG)

		shot, img, s = scrolled(t, at, 0, -300)
		if s.ScrollY != 0 {
			t.Errorf("Perform(scroll at %v by (0,-300)) back up: page scrolled to (%g,%g), want (0,0)", at, s.ScrollX, s.ScrollY)
		}
		c.checkPixel(t, "capture after scrolling the page back", shot, img, p, railColor(p.Y+s.ScrollY), tolPNG)
	})
}

// load navigates to a test page unless it is loaded already, waits for it
// to settle and returns the event it sent when it loaded.
func (c *checker) load(t *testing.T, page string) event {
	t.Helper()
	if c.page == page {
		return event{}
	}
	c.page = ""
	c.session = c.srv.newSession()
	c.url = fmt.Sprintf("%s/%s?s=%s", c.o.Pages, page, c.session)
	err := c.d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: c.url}})
	if err != nil {
		t.Fatalf("Perform(navigate to %s) = %v", c.url, err)
	}
	c.settle(t)
	loads := only(c.events(t), "load")
	if len(loads) != 1 {
		t.Fatalf("after navigating to %s and a capture: %d load events reached the server, want 1 (does Capture wait for the network to be quiet?)", c.url, len(loads))
	}
	c.page = page
	return loads[0]
}

// settle waits for the display to settle with a small, cheap capture.
func (c *checker) settle(t *testing.T) {
	t.Helper()
	vp := c.o.Viewport
	c.capture(t, screen.CaptureOptions{Size: screen.Size{W: vp.W / 10, H: vp.H / 10}, Format: screen.JPEG, Quality: 50})
}

// events returns the events the loaded page reported since the last call.
func (c *checker) events(t *testing.T) []event {
	t.Helper()
	return c.srv.take(c.session)
}

// do performs a, whose coordinates are CSS pixels already.
func (c *checker) do(t *testing.T, a actions.Action) {
	t.Helper()
	c.perform(t, screen.Mapped{Action: a})
}

// perform performs m, and fails t on any error: the checks perform only
// actions of declared capabilities (see needs).
func (c *checker) perform(t *testing.T, m screen.Mapped) {
	t.Helper()
	if err := c.d.Perform(t.Context(), m); err != nil {
		t.Fatalf("Perform(%s) = %v%s", describe(m.Action), err, c.unsupportedHint(m.Action, err))
	}
}

// blindInput checks a display without Pages: it refuses Navigate, and
// performs the probes of each declared input capability without an error
// (and refuses those of the others). A capture after each group checks
// that the display still answers.
func (c *checker) blindInput(t *testing.T) {
	for _, k := range []Capability{Pages, Pointer, BackForward, Keys, Keypad, Typing, Scroll} {
		t.Run(k.String(), func(t *testing.T) {
			if k == Pages {
				c.needs(t, Pages) // never declared here: Run checks pages with Pages
				return
			}
			if !c.needs(t, k) {
				return
			}
			for _, a := range c.probes(k) {
				c.do(t, a)
			}
			c.settle(t)
		})
	}
}

// capture captures the display, checks the image and its Frame, and
// returns both the shot and the decoded image.
func (c *checker) capture(t *testing.T, o screen.CaptureOptions) (screen.Shot, image.Image) {
	t.Helper()
	call := fmt.Sprintf("Capture(%s)", describeOptions(o))
	shot, err := c.d.Capture(t.Context(), o)
	if err != nil {
		t.Fatalf("%s = %v", call, err)
	}
	f := shot.Frame
	format := o.Format
	if format == "" {
		format = screen.PNG
	}
	img, err := decodeImage(shot.Data, format)
	if err != nil {
		t.Fatalf("%s: %v", call, err)
	}
	got := screen.Size{W: img.Bounds().Dx(), H: img.Bounds().Dy()}

	vp := c.o.Viewport
	clip := o.Region
	if clip.Empty() {
		clip = actions.Rect{Max: actions.Pt(float64(vp.W), float64(vp.H))}
	}
	want := o.Size
	if want.Empty() {
		want = screen.Size{W: round(clip.Dx()), H: round(clip.Dy())}
	}
	if got != want {
		t.Errorf("%s: the image is %dx%d, want %dx%d", call, got.W, got.H, want.W, want.H)
	}
	if f.Sent != got {
		t.Errorf("%s: Frame.Sent = %v, but the image is %dx%d", call, f.Sent, got.W, got.H)
	}
	if f.Format != format {
		t.Errorf("%s: Frame.Format = %q, want %q", call, f.Format, format)
	}
	if f.Viewport != vp || f.DPR != c.o.DPR {
		t.Errorf("%s: Frame.Viewport, DPR = %v, %g; want %v, %g", call, f.Viewport, f.DPR, vp, c.o.DPR)
	}
	fc := f.Clip
	if fc.Empty() || fc.Min.X < 0 || fc.Min.Y < 0 || fc.Max.X > float64(vp.W) || fc.Max.Y > float64(vp.H) {
		t.Errorf("%s: Frame.Clip %v is not inside the %dx%d viewport", call, fc, vp.W, vp.H)
	}
	if fc != clip {
		t.Errorf("%s: Frame.Clip = %v, want %v", call, fc, clip)
	}
	if ds := c.deviceSize(fc); abs(f.Capture.W-ds.W) > 1 || abs(f.Capture.H-ds.H) > 1 {
		t.Errorf("%s: Frame.Capture = %v, want the clip %v in device pixels, %v", call, f.Capture, fc, ds)
	}
	if f.Zoomed() != !o.Region.Empty() {
		t.Errorf("%s: Frame.Zoomed() = %v, want %v", call, f.Zoomed(), !o.Region.Empty())
	}
	if f.Zoom != 0 && f.Zoom != 1 {
		t.Errorf("%s: Frame.Zoom = %g, want 1 (the suite never zooms the page)", call, f.Zoom)
	}
	if f.ID == "" {
		t.Errorf("%s: Frame.ID is empty", call)
	} else if prev, dup := c.ids[f.ID]; dup {
		t.Errorf("%s: Frame.ID %q was already the ID of %s", call, f.ID, prev)
	} else {
		c.ids[f.ID] = call
	}
	if f.Time.IsZero() || f.Time.Before(c.lastTime) {
		t.Errorf("%s: Frame.Time = %v, want a time not before the previous capture's %v", call, f.Time, c.lastTime)
	} else {
		c.lastTime = f.Time
	}
	if c.page != "" || c.url != "" {
		if f.URL != c.url {
			t.Errorf("%s: Frame.URL = %q, want %q", call, f.URL, c.url)
		}
		if f.Settle.TimedOut {
			t.Errorf("%s: the test page did not settle: %s", call, f.Settle.Reason)
		}
	}
	return shot, img
}

// checkPixel checks the colour of a capture at a CSS point of the viewport.
func (c *checker) checkPixel(t *testing.T, what string, shot screen.Shot, img image.Image, p actions.Point, want color.RGBA, tol int) {
	t.Helper()
	q := shot.Frame.FromCSS(p)
	x, y := int(q.X), int(q.Y)
	if !(image.Point{x, y}).In(img.Bounds()) {
		t.Errorf("%s: CSS point %v maps to pixel (%d,%d), outside the %v image", what, p, x, y, img.Bounds().Size())
		return
	}
	if got := img.At(x, y); !near(got, want, tol) {
		t.Errorf("%s: pixel (%d,%d) (CSS %v) = %s, want %s", what, x, y, p, rgb(got), rgb(want))
	}
}

// event is one DOM event a test page reported (see testdata/input.html).
type event struct {
	Seq      int     `json:"seq"`
	Type     string  `json:"type"`
	Target   string  `json:"target"`
	X        float64 `json:"x"`
	Y        float64 `json:"y"`
	Button   int     `json:"button"`
	Buttons  int     `json:"buttons"`
	Detail   int     `json:"detail"`
	Shift    bool    `json:"shift"`
	Ctrl     bool    `json:"ctrl"`
	Alt      bool    `json:"alt"`
	Meta     bool    `json:"meta"`
	Key      string  `json:"key"`
	Code     string  `json:"code"`
	Location int     `json:"location"`
	DX       float64 `json:"dx"`
	Name     string  `json:"name"`
	Size     int     `json:"size"`
	DY       float64 `json:"dy"`
	Value    string  `json:"value"`
	ScrollX  float64 `json:"scrollX"`
	ScrollY  float64 `json:"scrollY"`
	BoxLeft  float64 `json:"boxLeft"`
	BoxTop   float64 `json:"boxTop"`
	DPR      float64 `json:"dpr"`
	W        int     `json:"w"`
	H        int     `json:"h"`
}

// only keeps the events of the given types.
func only(evs []event, types ...string) []event {
	var out []event
	for _, e := range evs {
		if slices.Contains(types, e.Type) {
			out = append(out, e)
		}
	}
	return out
}

// mouseFields keeps what a mouse check compares: type, position, button,
// buttons and detail.
func mouseFields(evs []event) []event {
	out := make([]event, 0, len(evs))
	for _, e := range evs {
		out = append(out, event{Type: e.Type, X: e.X, Y: e.Y, Button: e.Button, Buttons: e.Buttons, Detail: e.Detail})
	}
	return out
}

// keyEvent is a keyboard event as a key check compares it.
type keyEvent struct {
	Type, Key, Code        string
	Shift, Ctrl, Alt, Meta bool
	Location               int
}

// keyEvents returns the key events of evs, failing on none aimed at
// another element than target.
func keyEvents(evs []event, target string) []keyEvent {
	var out []keyEvent
	for _, e := range only(evs, "keydown", "keyup") {
		k := keyEvent{e.Type, e.Key, e.Code, e.Shift, e.Ctrl, e.Alt, e.Meta, e.Location}
		if e.Target != target {
			k.Type += " on " + e.Target // shows in the diff
		}
		out = append(out, k)
	}
	return out
}

func click(p actions.Point) actions.Action {
	return actions.Action{Kind: actions.Click, At: p, HasAt: true}
}

// describe names an action for a failure message. Typed text is test
// data, so it is shown.
func describe(a actions.Action) string {
	s := a.Kind.String()
	switch {
	case a.Kind == actions.Drag:
		s += fmt.Sprintf(" %v", a.Path)
	case a.HasAt:
		s += " at " + a.At.String()
	}
	if a.Kind == actions.Scroll {
		s += fmt.Sprintf(" by (%g,%g)", a.DeltaX, a.DeltaY)
	}
	if a.Button != actions.Left {
		s += " " + a.Button.String()
	}
	if len(a.Modifiers) > 0 {
		s += " with " + a.Modifiers.String()
	}
	if len(a.Keys) > 0 {
		s += " " + a.Keys.String()
	}
	if a.Text != "" {
		s += fmt.Sprintf(" %q", a.Text)
	}
	if a.URL != "" {
		s += " " + a.URL
	}
	return s
}

func describeOptions(o screen.CaptureOptions) string {
	var parts []string
	if !o.Size.Empty() {
		parts = append(parts, fmt.Sprintf("size %dx%d", o.Size.W, o.Size.H))
	}
	if o.Format != "" {
		parts = append(parts, string(o.Format))
	}
	if !o.Region.Empty() {
		parts = append(parts, "region "+o.Region.String())
	}
	return strings.Join(parts, ", ")
}

// decodeImage decodes data, which must be an image in format.
func decodeImage(data []byte, format screen.Format) (image.Image, error) {
	var (
		img image.Image
		err error
	)
	switch format {
	case screen.PNG:
		img, err = png.Decode(bytes.NewReader(data))
	case screen.JPEG:
		img, err = jpeg.Decode(bytes.NewReader(data))
	default:
		return nil, fmt.Errorf("unknown image format %q", format)
	}
	if err != nil {
		return nil, fmt.Errorf("the image is not a %s: %v", format, err)
	}
	return img, nil
}

// near reports whether c is within tol of want in each channel.
func near(c color.Color, want color.RGBA, tol int) bool {
	r, g, b, _ := c.RGBA()
	d := func(v uint32, w uint8) bool { return abs(int(v>>8)-int(w)) <= tol }
	return d(r, want.R) && d(g, want.G) && d(b, want.B)
}

func rgb(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("rgb(%d,%d,%d)", r>>8, g>>8, b>>8)
}

func round(f float64) int { return int(math.Round(f)) }

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

//go:embed testdata/*.html testdata/*.js testdata/browser/*.html
var pages embed.FS

// server serves the test pages and collects the events they report.
type server struct {
	url   string
	other string        // url with "localhost" for "127.0.0.1": another origin
	quit  chan struct{} // closed when the test ends: /hang answers then

	mu       sync.Mutex
	sessions int
	events   map[string][]event
}

// startServer starts the suite's test server on 127.0.0.1, closed when t
// ends.
func startServer(t *testing.T) *server {
	t.Helper()
	s := &server{events: map[string][]event{}, quit: make(chan struct{})}
	files, err := fs.Sub(pages, "testdata")
	if err != nil {
		t.Fatalf("test pages: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(files))
	mux.HandleFunc("GET /palette.js", servePalette)
	mux.HandleFunc("POST /events", s.record)
	mux.HandleFunc("GET /slow", s.slow)
	mux.HandleFunc("GET /hang", s.hang)
	mux.HandleFunc("GET /download", serveDownload)
	ts := httptest.NewServer(noStore(mux))
	t.Cleanup(func() {
		close(s.quit)
		ts.Close()
	})
	s.url = ts.URL
	s.other = strings.Replace(ts.URL, "127.0.0.1", "localhost", 1)
	return s
}

func noStore(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// slow answers after ?ms= milliseconds (at most 5000): a resource a page
// is still loading.
func (s *server) slow(w http.ResponseWriter, r *http.Request) {
	ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
	if err != nil || ms < 0 || ms > 5000 {
		ms = 300
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	case <-s.quit:
	}
	w.Header().Set("Content-Type", "image/gif")
	w.Write(gif1x1)
}

// gif1x1 is a transparent 1x1 GIF.
var gif1x1 = []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")

// hang never answers, until the request or the test ends: a resource that
// keeps a page loading for good.
func (s *server) hang(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.quit:
	}
}

// serveDownload answers ?name= as an attachment of ?n= bytes (at most
// 1 MB).
func serveDownload(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n < 0 || n > 1<<20 {
		n = 10
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", path.Base(r.URL.Query().Get("name"))))
	w.Write(bytes.Repeat([]byte("x"), n))
}

// servePalette hands the pages the colours the checks expect.
func servePalette(w http.ResponseWriter, _ *http.Request) {
	js := func(c color.RGBA) string { return fmt.Sprintf("[%d,%d,%d]", c.R, c.G, c.B) }
	var cs []string
	for _, c := range palette {
		cs = append(cs, js(c))
	}
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	fmt.Fprintf(w, "\"use strict\";\nconst palette = [%s];\nconst markerColor = %s;\n", strings.Join(cs, ", "), js(markerColor))
}

// newSession returns a new name to report a page load's events under.
func (s *server) newSession() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions++
	return fmt.Sprintf("p%d", s.sessions)
}

// record stores one event a page posted.
func (s *server) record(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	var e event
	if err := json.Unmarshal(body, &e); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	session := r.URL.Query().Get("s")
	s.mu.Lock()
	s.events[session] = append(s.events[session], e)
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// take returns the events of session that arrived since the last take, in
// the order the page sent them.
func (s *server) take(session string) []event {
	s.mu.Lock()
	evs := s.events[session]
	delete(s.events, session)
	s.mu.Unlock()
	slices.SortFunc(evs, func(a, b event) int { return a.Seq - b.Seq })
	return evs
}
