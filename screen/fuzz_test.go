package screen

import (
	"errors"
	"math"
	"testing"

	"github.com/spotter-harness/spotter/actions"
)

// fuzzGeometry builds a frame and a space from fuzz inputs, kept within sane
// ranges: viewports up to 4096 CSS px, a clip anywhere inside the viewport
// (given as fractions of it), sent images up to 8192 px, grids up to 2000
// cells and resized images up to 8192 px. ok is false for an empty clip.
func fuzzGeometry(vw, vh, x0, y0, x1, y1, sw, sh uint16, kind uint8, grid, rw, rh uint16) (f Frame, s Space, ok bool) {
	W, H := 1+int(vw)%4096, 1+int(vh)%4096
	frac := func(v uint16, n int) float64 { return float64(v) / math.MaxUint16 * float64(n) }
	ax, bx := frac(x0, W), frac(x1, W)
	ay, by := frac(y0, H), frac(y1, H)
	if ax > bx {
		ax, bx = bx, ax
	}
	if ay > by {
		ay, by = by, ay
	}
	if ax == bx || ay == by {
		return Frame{}, Space{}, false
	}
	f = Frame{
		ID:       "fuzz",
		Viewport: Size{W, H},
		DPR:      1,
		Clip:     actions.Rect{Min: actions.Pt(ax, ay), Max: actions.Pt(bx, by)},
		Sent:     Size{1 + int(sw)%8192, 1 + int(sh)%8192},
	}
	switch kind % 3 {
	case 1:
		s = Space{Kind: GridSpace, Grid: 1 + int(grid)%2000}
	case 2:
		s = Space{Kind: ResizedSpace, Resized: Size{1 + int(rw)%8192, 1 + int(rh)%8192}}
	default:
		s = Image
	}
	return f, s, true
}

// addGeometrySeeds seeds a fuzz target with the frames of the table tests:
// full size, downscaled, a zoom region, and extremes.
func addGeometrySeeds(f *testing.F, point func(i int) (float64, float64)) {
	const m = math.MaxUint16
	seeds := []struct {
		vw, vh, x0, y0, x1, y1, sw, sh uint16
		kind                           uint8
		grid, rw, rh                   uint16
	}{
		{1280 - 1, 800 - 1, 0, 0, m, m, 1280 - 1, 800 - 1, 0, 0, 0, 0},        // full size
		{1280 - 1, 800 - 1, 0, 0, m, m, 1024 - 1, 640 - 1, 0, 0, 0, 0},        // downscaled
		{1280 - 1, 800 - 1, 0, 0, m, m, 1024 - 1, 640 - 1, 1, 1000 - 1, 0, 0}, // Gemini grid
		{1280 - 1, 800 - 1, 0, 0, m, m, 1280 - 1, 800 - 1, 2, 0, 1288 - 1, 812 - 1},
		{1280 - 1, 800 - 1, 5120, 16384, 21504, 32768, 640 - 1, 400 - 1, 0, 0, 0, 0}, // zoom
		{0, 0, 0, 0, m, m, 8191, 8191, 0, 0, 0, 0},                                   // 1x1 viewport, huge image
		{4095, 4095, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0},                                   // tiny clip, 1x1 image, 1-cell grid
		{4095, 1, m - 1, 0, m, m, 7, 8191, 2, 0, 8191, 0},
	}
	for i, s := range seeds {
		x, y := point(i)
		f.Add(s.vw, s.vh, s.x0, s.y0, s.x1, s.y1, s.sw, s.sh, s.kind, s.grid, s.rw, s.rh, x, y)
	}
}

// FuzzToCSSStaysInViewport checks that any point inside the model's space
// maps inside the frame's clip, and so inside the viewport, and that any
// point outside it is refused with ErrOutOfBounds (or ErrInvalid for NaN
// and infinities), never clamped.
func FuzzToCSSStaysInViewport(f *testing.F) {
	edges := [][2]float64{{0, 0}, {500, 500}, {1000, 1000}, {1024, 640}, {1025, 3}, {-1, 5}, {math.NaN(), 1}, {math.Inf(1), 0}, {1e308, 1e308}, {0.5, 8191.9}}
	addGeometrySeeds(f, func(i int) (float64, float64) { return edges[i%len(edges)][0], edges[i%len(edges)][1] })
	f.Fuzz(func(t *testing.T, vw, vh, x0, y0, x1, y1, sw, sh uint16, kind uint8, grid, rw, rh uint16, px, py float64) {
		fr, s, ok := fuzzGeometry(vw, vh, x0, y0, x1, y1, sw, sh, kind, grid, rw, rh)
		if !ok {
			return
		}
		ext, err := fr.extent(s)
		if err != nil {
			t.Fatalf("extent(%v) error: %v", s, err)
		}
		w, h := float64(ext.W), float64(ext.H)

		// The raw point: mapped inside, or refused with the right error.
		p := actions.Pt(px, py)
		css, err := fr.ToCSS(p, s)
		finite := !math.IsNaN(px) && !math.IsNaN(py) && !math.IsInf(px, 0) && !math.IsInf(py, 0)
		switch {
		case !finite:
			if !errors.Is(err, actions.ErrInvalid) {
				t.Fatalf("ToCSS(%v, %v) on %+v: error %v, want ErrInvalid", p, s, fr, err)
			}
		case px < 0 || py < 0 || px > w || py > h:
			if !errors.Is(err, ErrOutOfBounds) {
				t.Fatalf("ToCSS(%v, %v) on %+v = %v, %v; want ErrOutOfBounds", p, s, fr, css, err)
			}
		default:
			if err != nil {
				t.Fatalf("ToCSS(%v, %v) on %+v error: %v", p, s, fr, err)
			}
			checkInside(t, fr, p, s, css)
		}

		// The point folded into the space: always mapped inside.
		if !finite {
			return
		}
		fold := func(v, n float64) float64 { return math.Min(math.Mod(math.Abs(v), n+1), n) }
		q := actions.Pt(fold(px, w), fold(py, h))
		css, err = fr.ToCSS(q, s)
		if err != nil {
			t.Fatalf("ToCSS(%v, %v) on %+v error: %v", q, s, fr, err)
		}
		checkInside(t, fr, q, s, css)
	})
}

func checkInside(t *testing.T, fr Frame, p actions.Point, s Space, css actions.Point) {
	t.Helper()
	c := fr.Clip
	if css.X < c.Min.X || css.Y < c.Min.Y || css.X >= c.Max.X || css.Y >= c.Max.Y {
		t.Fatalf("ToCSS(%v, %v) = %v, outside the clip %v", p, s, css, c)
	}
	if css.X < 0 || css.Y < 0 || css.X >= float64(fr.Viewport.W) || css.Y >= float64(fr.Viewport.H) {
		t.Fatalf("ToCSS(%v, %v) = %v, outside the %dx%d viewport", p, s, css, fr.Viewport.W, fr.Viewport.H)
	}
}

// FuzzRoundTrip checks that a point taken to CSS pixels and back lands in
// the sent-image pixel it started from, within one pixel, in every space.
// The point is given as fractions of the model's space.
func FuzzRoundTrip(f *testing.F) {
	fracs := [][2]uint16{{0, 0}, {math.MaxUint16, math.MaxUint16}, {32768, 32768}, {1, math.MaxUint16 - 1}}
	addGeometrySeeds(f, func(i int) (float64, float64) {
		return float64(fracs[i%len(fracs)][0]), float64(fracs[i%len(fracs)][1])
	})
	f.Fuzz(func(t *testing.T, vw, vh, x0, y0, x1, y1, sw, sh uint16, kind uint8, grid, rw, rh uint16, fx, fy float64) {
		fr, s, ok := fuzzGeometry(vw, vh, x0, y0, x1, y1, sw, sh, kind, grid, rw, rh)
		if !ok || math.IsNaN(fx) || math.IsNaN(fy) {
			return
		}
		ext, err := fr.extent(s)
		if err != nil {
			t.Fatalf("extent(%v) error: %v", s, err)
		}
		// A fraction in [0, 1] of the space, from any float.
		unit := func(v float64) float64 {
			return math.Min(math.Mod(math.Abs(v), math.MaxUint16+1), math.MaxUint16) / math.MaxUint16
		}
		p := actions.Pt(unit(fx)*float64(ext.W), unit(fy)*float64(ext.H))

		img, err := fr.ToImage(p, s)
		if err != nil {
			t.Fatalf("ToImage(%v, %v) on %+v error: %v", p, s, fr, err)
		}
		css, err := fr.ToCSS(p, s)
		if err != nil {
			t.Fatalf("ToCSS(%v, %v) on %+v error: %v", p, s, fr, err)
		}
		back := fr.FromCSS(css)
		want := actions.Pt(math.Floor(img.X), math.Floor(img.Y))
		if math.Abs(back.X-want.X) > 1 || math.Abs(back.Y-want.Y) > 1 {
			t.Fatalf("on %+v: %v in %v is image pixel %v, CSS %v, back to image pixel %v", fr, p, s, want, css, back)
		}
		if back.X < 0 || back.Y < 0 || back.X >= float64(fr.Sent.W) || back.Y >= float64(fr.Sent.H) {
			t.Fatalf("on %+v: FromCSS(%v) = %v, outside the %dx%d image", fr, css, back, fr.Sent.W, fr.Sent.H)
		}
	})
}
