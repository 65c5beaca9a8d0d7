package screen

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
)

// Test frames. CSS per image pixel: full 1, down 1.25, zoom 0.5.
var (
	// full is a 1280x800 viewport sent at full size.
	full = Frame{
		ID: "full", Viewport: Size{1280, 800}, DPR: 1,
		Clip:    actions.Rect{Max: actions.Pt(1280, 800)},
		Capture: Size{1280, 800}, Sent: Size{1280, 800},
	}
	// down is a DPR-2 capture of a 1280x800 viewport sent at 1024x640.
	down = Frame{
		ID: "down", Viewport: Size{1280, 800}, DPR: 2,
		Clip:    actions.Rect{Max: actions.Pt(1280, 800)},
		Capture: Size{2560, 1600}, Sent: Size{1024, 640},
	}
	// zoom is a 320x200 CSS region sent at 640x400.
	zoom = Frame{
		ID: "zoom", Viewport: Size{1280, 800}, DPR: 1,
		Clip:    actions.Rect{Min: actions.Pt(100, 200), Max: actions.Pt(420, 400)},
		Capture: Size{320, 200}, Sent: Size{640, 400},
	}
	// up sends a 1280x800 viewport at 640x400: 2 CSS px per image pixel.
	up = Frame{
		ID: "up", Viewport: Size{1280, 800}, DPR: 1,
		Clip: actions.Rect{Max: actions.Pt(1280, 800)}, Sent: Size{640, 400},
	}

	resized1280 = Space{Kind: ResizedSpace, Resized: Size{1288, 812}} // SmartResize(1280x800)
)

// withDPR returns f captured at another device pixel ratio.
func withDPR(f Frame, dpr float64) Frame {
	f.DPR = dpr
	f.Capture = Size{int(f.Clip.Dx() * dpr), int(f.Clip.Dy() * dpr)}
	return f
}

// errKind names the sentinel an error must wrap; "" means no error,
// "other" means an error wrapping neither.
type errKind string

const (
	noErr     errKind = ""
	outOfBnds errKind = "ErrOutOfBounds"
	invalid   errKind = "actions.ErrInvalid"
	otherErr  errKind = "other"
)

func checkErr(t *testing.T, call string, err error, want errKind, wantMsg string) {
	t.Helper()
	var got errKind
	switch {
	case err == nil:
		got = noErr
	case errors.Is(err, ErrOutOfBounds):
		got = outOfBnds
	case errors.Is(err, actions.ErrInvalid):
		got = invalid
	default:
		got = otherErr
	}
	if got != want {
		t.Fatalf("%s error = %v (%q), want %q", call, err, got, want)
	}
	if wantMsg != "" && err.Error() != wantMsg {
		t.Errorf("%s error = %q, want %q", call, err.Error(), wantMsg)
	}
}

func TestToImage(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name    string
		f       Frame
		p       actions.Point
		s       Space
		want    actions.Point
		err     errKind
		wantMsg string
	}{
		{name: "image origin", f: full, p: actions.Pt(0, 0), s: Image, want: actions.Pt(0, 0)},
		{name: "image last pixel", f: full, p: actions.Pt(1279, 799), s: Image, want: actions.Pt(1279, 799)},
		{name: "image fraction kept", f: full, p: actions.Pt(639.7, 10.25), s: Image, want: actions.Pt(639.7, 10.25)},
		{name: "image far edge clamps to last pixel", f: full, p: actions.Pt(1280, 800), s: Image, want: actions.Pt(1279, 799)},
		{name: "image far edge x only", f: down, p: actions.Pt(1024, 5), s: Image, want: actions.Pt(1023, 5)},
		{name: "image just inside far edge", f: down, p: actions.Pt(1023.99, 639.99), s: Image, want: actions.Pt(1023.99, 639.99)},
		{name: "image past far edge", f: down, p: actions.Pt(1024.01, 5), s: Image, err: outOfBnds},
		{name: "image off by one", f: down, p: actions.Pt(1025, 640), s: Image, err: outOfBnds},
		{name: "image far away", f: down, p: actions.Pt(1100, 20), s: Image, err: outOfBnds,
			wantMsg: "point (1100,20) is outside the 1024x640 screenshot"},
		{name: "image y past edge", f: down, p: actions.Pt(10, 641), s: Image, err: outOfBnds,
			wantMsg: "point (10,641) is outside the 1024x640 screenshot"},
		{name: "image negative", f: down, p: actions.Pt(-1, 20), s: Image, err: outOfBnds,
			wantMsg: "point (-1,20) is outside the 1024x640 screenshot"},
		{name: "image slightly negative", f: down, p: actions.Pt(3, -0.001), s: Image, err: outOfBnds},
		{name: "image negative zero", f: down, p: actions.Pt(math.Copysign(0, -1), 0), s: Image, want: actions.Pt(0, 0)},
		{name: "image huge", f: down, p: actions.Pt(1e308, 1), s: Image, err: outOfBnds},
		{name: "image max int", f: down, p: actions.Pt(math.MaxInt64, math.MaxInt64), s: Image, err: outOfBnds},
		{name: "image NaN", f: down, p: actions.Pt(nan, 1), s: Image, err: invalid},
		{name: "image +Inf", f: down, p: actions.Pt(1, inf), s: Image, err: invalid},
		{name: "image -Inf", f: down, p: actions.Pt(-inf, 1), s: Image, err: invalid},

		{name: "grid 0", f: down, p: actions.Pt(0, 0), s: Grid1000, want: actions.Pt(0, 0)},
		{name: "grid 500", f: down, p: actions.Pt(500, 500), s: Grid1000, want: actions.Pt(512, 320)},
		{name: "grid 999", f: down, p: actions.Pt(999, 999), s: Grid1000, want: actions.Pt(1022.976, 639.36)},
		{name: "grid 1000 clamps to last pixel", f: down, p: actions.Pt(1000, 1000), s: Grid1000, want: actions.Pt(1023, 639)},
		{name: "grid 1001", f: down, p: actions.Pt(1001, 500), s: Grid1000, err: outOfBnds,
			wantMsg: "point (1001,500) is outside the 1000x1000 grid over the screenshot: x and y must be 0..999"},
		{name: "grid negative", f: down, p: actions.Pt(500, -1), s: Grid1000, err: outOfBnds},
		{name: "grid pixel-sized cells stay exact", f: full, p: actions.Pt(3, 5), s: Space{Kind: GridSpace, Grid: 1000}, want: actions.Pt(3.84, 4)},
		{name: "grid on zoom frame", f: zoom, p: actions.Pt(250, 750), s: Grid1000, want: actions.Pt(160, 300)},

		{name: "resized centre", f: full, p: actions.Pt(644, 406), s: resized1280, want: actions.Pt(640, 400)},
		{name: "resized far edge", f: full, p: actions.Pt(1288, 812), s: resized1280, want: actions.Pt(1279, 799)},
		{name: "resized beyond the sent size is fine", f: full, p: actions.Pt(1285, 805), s: resized1280,
			want: actions.Pt(1285*1280.0/1288, 805*800.0/812)},
		{name: "resized past edge", f: full, p: actions.Pt(1289, 0), s: resized1280, err: outOfBnds,
			wantMsg: "point (1289,0) is outside the 1288x812 screenshot (resized1288x812)"},

		{name: "grid without size", f: full, p: actions.Pt(1, 1), s: Space{Kind: GridSpace}, err: otherErr},
		{name: "resized without size", f: full, p: actions.Pt(1, 1), s: Space{Kind: ResizedSpace}, err: otherErr},
		{name: "unknown space", f: full, p: actions.Pt(1, 1), s: Space{Kind: 9}, err: otherErr},

		{name: "zero frame", f: Frame{}, p: actions.Pt(1, 1), s: Image, err: otherErr},
		{name: "no sent size", f: Frame{Viewport: Size{10, 10}, Clip: actions.Rect{Max: actions.Pt(10, 10)}}, p: actions.Pt(1, 1), s: Image, err: otherErr},
		{name: "empty clip", f: Frame{Viewport: Size{10, 10}, Sent: Size{10, 10}}, p: actions.Pt(1, 1), s: Image, err: otherErr},
		{name: "inverted clip", f: Frame{Viewport: Size{10, 10}, Sent: Size{10, 10}, Clip: actions.Rect{Min: actions.Pt(8, 8), Max: actions.Pt(2, 2)}}, p: actions.Pt(1, 1), s: Image, err: otherErr},
		{name: "clip outside viewport", f: Frame{Viewport: Size{10, 10}, Sent: Size{10, 10}, Clip: actions.Rect{Max: actions.Pt(11, 10)}}, p: actions.Pt(1, 1), s: Image, err: otherErr},
		{name: "clip negative", f: Frame{Viewport: Size{10, 10}, Sent: Size{10, 10}, Clip: actions.Rect{Min: actions.Pt(-1, 0), Max: actions.Pt(5, 10)}}, p: actions.Pt(1, 1), s: Image, err: otherErr},
		{name: "clip NaN", f: Frame{Viewport: Size{10, 10}, Sent: Size{10, 10}, Clip: actions.Rect{Max: actions.Pt(math.NaN(), 10)}}, p: actions.Pt(1, 1), s: Image, err: otherErr},
		{name: "no viewport", f: Frame{Sent: Size{10, 10}, Clip: actions.Rect{Max: actions.Pt(10, 10)}}, p: actions.Pt(1, 1), s: Image, err: otherErr},
		{name: "clip too small for its image", f: Frame{Viewport: Size{10, 10}, Sent: Size{10, 10}, Clip: actions.Rect{Max: actions.Pt(5e-324, 10)}}, p: actions.Pt(1, 1), s: Image, err: otherErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.f.ToImage(tt.p, tt.s)
			checkErr(t, "ToImage", err, tt.err, tt.wantMsg)
			if err != nil {
				return
			}
			if got != tt.want {
				t.Errorf("%s.ToImage(%v, %v) = %v, want %v", tt.f.ID, tt.p, tt.s, got, tt.want)
			}
		})
	}
}

func TestToCSS(t *testing.T) {
	tests := []struct {
		name string
		f    Frame
		p    actions.Point
		s    Space
		want actions.Point
		err  errKind
	}{
		{name: "full origin", f: full, p: actions.Pt(0, 0), s: Image, want: actions.Pt(0.5, 0.5)},
		{name: "full pixel centre", f: full, p: actions.Pt(10.7, 20.2), s: Image, want: actions.Pt(10.5, 20.5)},
		{name: "full last pixel", f: full, p: actions.Pt(1279, 799), s: Image, want: actions.Pt(1279.5, 799.5)},
		{name: "full far edge", f: full, p: actions.Pt(1280, 800), s: Image, want: actions.Pt(1279.5, 799.5)},
		{name: "full past edge", f: full, p: actions.Pt(1281, 800), s: Image, err: outOfBnds},

		{name: "down origin", f: down, p: actions.Pt(0, 0), s: Image, want: actions.Pt(0.625, 0.625)},
		{name: "down centre", f: down, p: actions.Pt(512, 320), s: Image, want: actions.Pt(640.625, 400.625)},
		{name: "down last pixel", f: down, p: actions.Pt(1023, 639), s: Image, want: actions.Pt(1279.375, 799.375)},
		{name: "down far edge", f: down, p: actions.Pt(1024, 640), s: Image, want: actions.Pt(1279.375, 799.375)},
		{name: "down off by one", f: down, p: actions.Pt(1025, 639), s: Image, err: outOfBnds},
		{name: "down negative", f: down, p: actions.Pt(-1, 0), s: Image, err: outOfBnds},

		{name: "grid 0", f: down, p: actions.Pt(0, 0), s: Grid1000, want: actions.Pt(0.625, 0.625)},
		{name: "grid 500", f: down, p: actions.Pt(500, 500), s: Grid1000, want: actions.Pt(640.625, 400.625)},
		{name: "grid 999", f: down, p: actions.Pt(999, 999), s: Grid1000, want: actions.Pt(1278.125, 799.375)},
		{name: "grid 1000", f: down, p: actions.Pt(1000, 1000), s: Grid1000, want: actions.Pt(1279.375, 799.375)},
		{name: "grid 1001", f: down, p: actions.Pt(1001, 1000), s: Grid1000, err: outOfBnds},
		{name: "grid 500 full", f: full, p: actions.Pt(500, 500), s: Grid1000, want: actions.Pt(640.5, 400.5)},
		{name: "grid 999 full", f: full, p: actions.Pt(999, 999), s: Grid1000, want: actions.Pt(1278.5, 799.5)},

		{name: "zoom origin", f: zoom, p: actions.Pt(0, 0), s: Image, want: actions.Pt(100.25, 200.25)},
		{name: "zoom centre", f: zoom, p: actions.Pt(320, 200), s: Image, want: actions.Pt(260.25, 300.25)},
		{name: "zoom last pixel", f: zoom, p: actions.Pt(639, 399), s: Image, want: actions.Pt(419.75, 399.75)},
		{name: "zoom far edge", f: zoom, p: actions.Pt(640, 400), s: Image, want: actions.Pt(419.75, 399.75)},
		{name: "zoom past edge", f: zoom, p: actions.Pt(641, 400), s: Image, err: outOfBnds},
		{name: "zoom grid", f: zoom, p: actions.Pt(500, 500), s: Grid1000, want: actions.Pt(260.25, 300.25)},

		{name: "up origin", f: up, p: actions.Pt(0, 0), s: Image, want: actions.Pt(1, 1)},
		{name: "up last pixel", f: up, p: actions.Pt(639, 399), s: Image, want: actions.Pt(1279, 799)},

		{name: "resized", f: full, p: actions.Pt(644, 406), s: resized1280, want: actions.Pt(640.5, 400.5)},
		{name: "resized far edge", f: full, p: actions.Pt(1288, 812), s: resized1280, want: actions.Pt(1279.5, 799.5)},
		{name: "resized on down", f: down, p: actions.Pt(644, 406), s: resized1280, want: actions.Pt(512*1.25+0.625, 320*1.25+0.625)},
		{name: "resized past edge", f: full, p: actions.Pt(1288, 813), s: resized1280, err: outOfBnds},

		{name: "invalid frame", f: Frame{}, p: actions.Pt(0, 0), s: Image, err: otherErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.f.ToCSS(tt.p, tt.s)
			checkErr(t, "ToCSS", err, tt.err, "")
			if err != nil {
				return
			}
			if got != tt.want {
				t.Errorf("%s.ToCSS(%v, %v) = %v, want %v", tt.f.ID, tt.p, tt.s, got, tt.want)
			}
		})
	}
}

// TestToCSSIgnoresDPR checks that the device pixel ratio never changes the
// CSS mapping: Sent is made from the CSS clip.
func TestToCSSIgnoresDPR(t *testing.T) {
	points := []actions.Point{actions.Pt(0, 0), actions.Pt(1, 1), actions.Pt(511.5, 319.5), actions.Pt(1023, 639), actions.Pt(1024, 640)}
	for _, base := range []Frame{full, down, zoom} {
		for _, dpr := range []float64{1, 1.25, 1.5, 2, 3} {
			f := withDPR(base, dpr)
			for _, p := range points {
				want, werr := withDPR(base, 1).ToCSS(p, Image)
				got, err := f.ToCSS(p, Image)
				if (err == nil) != (werr == nil) || got != want {
					t.Errorf("%s at DPR %g: ToCSS(%v) = %v, %v; want %v, %v (as at DPR 1)", f.ID, dpr, p, got, err, want, werr)
				}
			}
		}
	}
}

func TestFromCSS(t *testing.T) {
	tests := []struct {
		name string
		f    Frame
		p    actions.Point
		want actions.Point
	}{
		{"full", full, actions.Pt(640.5, 400.5), actions.Pt(640, 400)},
		{"full origin", full, actions.Pt(0, 0), actions.Pt(0, 0)},
		{"full edge", full, actions.Pt(1279.999, 799.999), actions.Pt(1279, 799)},
		{"down centre", down, actions.Pt(640.625, 400.625), actions.Pt(512, 320)},
		{"down pixel start", down, actions.Pt(1.25, 2.5), actions.Pt(1, 2)},
		{"down just before pixel", down, actions.Pt(1.2499, 2.4999), actions.Pt(0, 1)},
		{"down edge", down, actions.Pt(1279.999, 799.999), actions.Pt(1023, 639)},
		{"zoom origin", zoom, actions.Pt(100, 200), actions.Pt(0, 0)},
		{"zoom edge", zoom, actions.Pt(419.99, 399.99), actions.Pt(639, 399)},
		{"zoom outside before", zoom, actions.Pt(50, 100), actions.Pt(-100, -200)},
		{"zoom outside after", zoom, actions.Pt(420, 400), actions.Pt(640, 400)},
		{"up", up, actions.Pt(1279, 799), actions.Pt(639, 399)},
		{"invalid frame", Frame{}, actions.Pt(5, 5), actions.Point{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.FromCSS(tt.p); got != tt.want {
				t.Errorf("%s.FromCSS(%v) = %v, want %v", tt.f.ID, tt.p, got, tt.want)
			}
		})
	}
}

// TestRoundTripEveryPixel maps every pixel of each axis to CSS and back.
func TestRoundTripEveryPixel(t *testing.T) {
	for _, f := range []Frame{full, down, zoom, up, withDPR(down, 3)} {
		n := max(f.Sent.W, f.Sent.H)
		for i := range n {
			p := actions.Pt(float64(i%f.Sent.W), float64((i*7)%f.Sent.H))
			css, err := f.ToCSS(p, Image)
			if err != nil {
				t.Fatalf("%s.ToCSS(%v) error: %v", f.ID, p, err)
			}
			if css.X < 0 || css.Y < 0 || css.X >= float64(f.Viewport.W) || css.Y >= float64(f.Viewport.H) {
				t.Fatalf("%s.ToCSS(%v) = %v, outside the %dx%d viewport", f.ID, p, css, f.Viewport.W, f.Viewport.H)
			}
			if back := f.FromCSS(css); back != p {
				t.Fatalf("%s.FromCSS(ToCSS(%v) = %v) = %v, want %v", f.ID, p, css, back, p)
			}
		}
	}
}

func TestScale(t *testing.T) {
	tests := []struct {
		f      Frame
		sx, sy float64
	}{
		{full, 1, 1},
		{down, 0.8, 0.8},
		{withDPR(down, 1), 0.8, 0.8},
		{zoom, 2, 2},
		{up, 0.5, 0.5},
		{Frame{ID: "zero"}, 0, 0},
	}
	for _, tt := range tests {
		if sx, sy := tt.f.Scale(); sx != tt.sx || sy != tt.sy {
			t.Errorf("%s.Scale() = %g, %g, want %g, %g", tt.f.ID, sx, sy, tt.sx, tt.sy)
		}
	}
}

func TestMap(t *testing.T) {
	click := actions.Action{Kind: actions.Click, At: actions.Pt(512, 320), HasAt: true, Button: actions.Right, Modifiers: actions.Chord{"shift"}}
	tests := []struct {
		name    string
		f       Frame
		a       actions.Action
		s       Space
		want    actions.Action
		err     errKind
		wantMsg string
	}{
		{
			name: "click keeps other fields",
			f:    down, a: click, s: Image,
			want: actions.Action{Kind: actions.Click, At: actions.Pt(640.625, 400.625), HasAt: true, Button: actions.Right, Modifiers: actions.Chord{"shift"}},
		},
		{
			name: "click on grid",
			f:    down, a: actions.Action{Kind: actions.Click, At: actions.Pt(500, 500), HasAt: true}, s: Grid1000,
			want: actions.Action{Kind: actions.Click, At: actions.Pt(640.625, 400.625), HasAt: true},
		},
		{
			name: "click on zoom frame",
			f:    zoom, a: actions.Action{Kind: actions.Click, At: actions.Pt(0, 0), HasAt: true}, s: Image,
			want: actions.Action{Kind: actions.Click, At: actions.Pt(100.25, 200.25), HasAt: true},
		},
		{
			name: "click out of bounds names the field",
			f:    down, a: actions.Action{Kind: actions.Click, At: actions.Pt(1100, 20), HasAt: true}, s: Image,
			err: outOfBnds, wantMsg: "at: point (1100,20) is outside the 1024x640 screenshot",
		},
		{
			name: "mouse down at the cursor clears At",
			f:    down, a: actions.Action{Kind: actions.MouseDown, At: actions.Pt(5000, 5000)}, s: Image,
			want: actions.Action{Kind: actions.MouseDown},
		},
		{
			name: "drag path with the far edge",
			f:    down, a: actions.Action{Kind: actions.Drag, Path: []actions.Point{actions.Pt(0, 0), actions.Pt(512, 320), actions.Pt(1024, 640)}}, s: Image,
			want: actions.Action{Kind: actions.Drag, Path: []actions.Point{actions.Pt(0.625, 0.625), actions.Pt(640.625, 400.625), actions.Pt(1279.375, 799.375)}},
		},
		{
			name: "drag path error names the point",
			f:    down, a: actions.Action{Kind: actions.Drag, Path: []actions.Point{actions.Pt(0, 0), actions.Pt(1, 1), actions.Pt(1100, 20)}}, s: Image,
			err: outOfBnds, wantMsg: "path[2]: point (1100,20) is outside the 1024x640 screenshot",
		},
		{
			name: "drag path NaN",
			f:    down, a: actions.Action{Kind: actions.Drag, Path: []actions.Point{actions.Pt(0, 0), actions.Pt(math.NaN(), 1)}}, s: Image,
			err: invalid,
		},
		{
			name: "scroll in image pixels",
			f:    down, a: actions.Action{Kind: actions.Scroll, At: actions.Pt(512, 320), HasAt: true, DeltaX: -40, DeltaY: 100}, s: Image,
			want: actions.Action{Kind: actions.Scroll, At: actions.Pt(640.625, 400.625), HasAt: true, DeltaX: -50, DeltaY: 125},
		},
		{
			name: "scroll full size is unchanged",
			f:    full, a: actions.Action{Kind: actions.Scroll, At: actions.Pt(10, 10), HasAt: true, DeltaY: -300}, s: Image,
			want: actions.Action{Kind: actions.Scroll, At: actions.Pt(10.5, 10.5), HasAt: true, DeltaY: -300},
		},
		{
			name: "scroll Gemini magnitude is normalized",
			f:    down, a: actions.Action{Kind: actions.Scroll, At: actions.Pt(500, 500), HasAt: true, DeltaY: 800}, s: Grid1000,
			want: actions.Action{Kind: actions.Scroll, At: actions.Pt(640.625, 400.625), HasAt: true, DeltaY: 640},
		},
		{
			name: "scroll Gemini sideways uses the width",
			f:    full, a: actions.Action{Kind: actions.Scroll, At: actions.Pt(0, 0), HasAt: true, DeltaX: -500}, s: Grid1000,
			want: actions.Action{Kind: actions.Scroll, At: actions.Pt(0.5, 0.5), HasAt: true, DeltaX: -640},
		},
		{
			name: "scroll on zoom frame",
			f:    zoom, a: actions.Action{Kind: actions.Scroll, At: actions.Pt(0, 0), HasAt: true, DeltaY: 100}, s: Image,
			want: actions.Action{Kind: actions.Scroll, At: actions.Pt(100.25, 200.25), HasAt: true, DeltaY: 50},
		},
		{
			name: "scroll in resized space",
			f:    full, a: actions.Action{Kind: actions.Scroll, DeltaY: 812}, s: resized1280,
			want: actions.Action{Kind: actions.Scroll, DeltaY: 800},
		},
		{
			name: "scroll NaN",
			f:    down, a: actions.Action{Kind: actions.Scroll, DeltaY: math.NaN()}, s: Image,
			err: invalid,
		},
		{
			name: "scroll too large",
			f:    up, a: actions.Action{Kind: actions.Scroll, DeltaY: 1e308}, s: Image,
			err: invalid,
		},
		{
			name: "zoom whole image reaches the far edge",
			f:    down, a: actions.Action{Kind: actions.Zoom, Region: actions.Rect{Max: actions.Pt(1024, 640)}}, s: Image,
			want: actions.Action{Kind: actions.Zoom, Region: actions.Rect{Max: actions.Pt(1280, 800)}},
		},
		{
			name: "zoom region",
			f:    down, a: actions.Action{Kind: actions.Zoom, Region: actions.Rect{Min: actions.Pt(512, 320), Max: actions.Pt(768, 480)}}, s: Image,
			want: actions.Action{Kind: actions.Zoom, Region: actions.Rect{Min: actions.Pt(640, 400), Max: actions.Pt(960, 600)}},
		},
		{
			name: "zoom region on grid",
			f:    down, a: actions.Action{Kind: actions.Zoom, Region: actions.Rect{Min: actions.Pt(250, 250), Max: actions.Pt(750, 1000)}}, s: Grid1000,
			want: actions.Action{Kind: actions.Zoom, Region: actions.Rect{Min: actions.Pt(320, 200), Max: actions.Pt(960, 800)}},
		},
		{
			name: "zoom region inside a zoom frame",
			f:    zoom, a: actions.Action{Kind: actions.Zoom, Region: actions.Rect{Min: actions.Pt(0, 0), Max: actions.Pt(640, 400)}}, s: Image,
			want: actions.Action{Kind: actions.Zoom, Region: actions.Rect{Min: actions.Pt(100, 200), Max: actions.Pt(420, 400)}},
		},
		{
			name: "zoom region past the edge",
			f:    down, a: actions.Action{Kind: actions.Zoom, Region: actions.Rect{Max: actions.Pt(1025, 640)}}, s: Image,
			err: outOfBnds, wantMsg: "region: max corner: point (1025,640) is outside the 1024x640 screenshot",
		},
		{
			name: "zoom region starting on the far edge is empty",
			f:    down, a: actions.Action{Kind: actions.Zoom, Region: actions.Rect{Min: actions.Pt(1024, 0), Max: actions.Pt(1024, 640)}}, s: Image,
			err: invalid,
		},
		{
			name: "zoom region inverted",
			f:    down, a: actions.Action{Kind: actions.Zoom, Region: actions.Rect{Min: actions.Pt(500, 500), Max: actions.Pt(100, 600)}}, s: Image,
			err: invalid,
		},
		{
			name: "zoom without region",
			f:    down, a: actions.Action{Kind: actions.Zoom}, s: Image,
			err: invalid,
		},
		{
			name: "type passes through, even with no frame",
			f:    Frame{}, a: actions.Action{Kind: actions.Type, Text: "hello"}, s: Space{Kind: 9},
			want: actions.Action{Kind: actions.Type, Text: "hello"},
		},
		{
			name: "keypress passes through",
			f:    down, a: actions.Action{Kind: actions.Keypress, Keys: actions.Chord{"ctrl", "c"}}, s: Grid1000,
			want: actions.Action{Kind: actions.Keypress, Keys: actions.Chord{"ctrl", "c"}},
		},
		{
			name: "click needs a valid frame",
			f:    Frame{}, a: click, s: Image,
			err: otherErr,
		},
		{
			name: "click needs a valid space",
			f:    down, a: click, s: Space{Kind: GridSpace},
			err: otherErr,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.f.Map(tt.a, tt.s)
			checkErr(t, "Map", err, tt.err, tt.wantMsg)
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.want, got.Action); diff != "" {
				t.Errorf("%s.Map(%v, %v) (-want +got):\n%s", tt.f.ID, tt.a.Kind, tt.s, diff)
			}
		})
	}
}

// TestMapDoesNotAlias checks that Map copies Path.
func TestMapDoesNotAlias(t *testing.T) {
	a := actions.Action{Kind: actions.Drag, Path: []actions.Point{actions.Pt(1, 1), actions.Pt(2, 2)}}
	m, err := down.Map(a, Image)
	if err != nil {
		t.Fatalf("Map(%v) error: %v", a.Path, err)
	}
	m.Path[0] = actions.Pt(99, 99)
	if diff := cmp.Diff([]actions.Point{actions.Pt(1, 1), actions.Pt(2, 2)}, a.Path); diff != "" {
		t.Errorf("Map changed its input path (-want +got):\n%s", diff)
	}
}

// TestErrorsReadWell checks that every bounds error names the point and a
// size, whatever the space.
func TestErrorsReadWell(t *testing.T) {
	for _, s := range []Space{Image, Grid1000, resized1280, {Kind: GridSpace, Grid: 100}} {
		_, err := down.ToCSS(actions.Pt(5000, 3), s)
		if !errors.Is(err, ErrOutOfBounds) {
			t.Fatalf("ToCSS((5000,3), %v) error = %v, want ErrOutOfBounds", s, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "(5000,3)") || !strings.Contains(msg, "x") {
			t.Errorf("ToCSS((5000,3), %v) error = %q, want the point and a size", s, msg)
		}
	}
}

// TestToCSSRoundingStaysInsideClip uses a clip one float64 step wide, where
// the centre of the last pixel rounds onto the far edge of the clip.
func TestToCSSRoundingStaysInsideClip(t *testing.T) {
	hi := math.Nextafter(1000, 2000)
	f := Frame{
		ID: "ulp", Viewport: Size{1280, 800},
		Clip: actions.Rect{Min: actions.Pt(1000, 0), Max: actions.Pt(hi, 800)},
		Sent: Size{4, 800},
	}
	for x := range 5 {
		p := actions.Pt(float64(x), 0)
		got, err := f.ToCSS(p, Image)
		if err != nil {
			t.Fatalf("ToCSS(%v) error: %v", p, err)
		}
		if got.X < 1000 || got.X >= hi {
			t.Errorf("ToCSS(%v) = %v, want x in [1000, %v)", p, got, hi)
		}
	}
}
