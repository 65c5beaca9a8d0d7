package screen

import (
	"fmt"
	"math"

	"github.com/spotter-harness/spotter/actions"
)

// This file maps coordinates between the three spaces a Frame knows about:
//
//	model space --(Space)--> image space (the Sent image) --(Clip/Sent)--> CSS px of the viewport
//
// Bounds are checked in the model's own space, so an error can say exactly
// what the model got wrong. Only the closed far edge (x == W in image space,
// v == Grid on a grid) is accepted beyond the last pixel, and it clamps to
// the last pixel; anything further out is an error wrapping ErrOutOfBounds,
// never a silent clamp.

// boundsError is a point outside the image a model was given. It wraps
// ErrOutOfBounds and reads as a sentence meant for the model.
type boundsError struct {
	p    actions.Point
	s    Space
	size Size // extent of the model's space
}

func (e *boundsError) Error() string {
	switch e.s.Kind {
	case GridSpace:
		return fmt.Sprintf("point %v is outside the %dx%d grid over the screenshot: x and y must be 0..%d", e.p, e.size.W, e.size.H, e.s.Grid-1)
	case ResizedSpace:
		return fmt.Sprintf("point %v is outside the %dx%d screenshot (%v)", e.p, e.size.W, e.size.H, e.s)
	}
	return fmt.Sprintf("point %v is outside the %dx%d screenshot", e.p, e.size.W, e.size.H)
}

func (e *boundsError) Unwrap() error { return ErrOutOfBounds }

// check reports whether f has the geometry needed to map coordinates: a
// non-empty Sent image, a non-empty finite Clip inside a non-empty Viewport.
// It guards every division below.
func (f Frame) check() error {
	if f.Sent.Empty() {
		return fmt.Errorf("frame %q: sent image size %dx%d is empty", f.ID, f.Sent.W, f.Sent.H)
	}
	if f.Viewport.Empty() {
		return fmt.Errorf("frame %q: viewport %dx%d is empty", f.ID, f.Viewport.W, f.Viewport.H)
	}
	c := f.Clip
	for _, v := range [...]float64{c.Min.X, c.Min.Y, c.Max.X, c.Max.Y} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("frame %q: clip %v is not finite", f.ID, c)
		}
	}
	if c.Empty() {
		return fmt.Errorf("frame %q: clip %v is empty", f.ID, c)
	}
	if c.Min.X < 0 || c.Min.Y < 0 || c.Max.X > float64(f.Viewport.W) || c.Max.Y > float64(f.Viewport.H) {
		return fmt.Errorf("frame %q: clip %v extends outside the %dx%d viewport", f.ID, c, f.Viewport.W, f.Viewport.H)
	}
	sx, sy := float64(f.Sent.W)/c.Dx(), float64(f.Sent.H)/c.Dy()
	if math.IsInf(sx, 0) || math.IsInf(sy, 0) {
		return fmt.Errorf("frame %q: clip %v is too small for a %dx%d image", f.ID, c, f.Sent.W, f.Sent.H)
	}
	return nil
}

// Scale returns the image pixels per CSS pixel along each axis: how much the
// clip was scaled to make the sent image. It is below 1 for a downscaled
// capture and above 1 for a zoom. An invalid frame gives 0, 0.
func (f Frame) Scale() (sx, sy float64) {
	if f.check() != nil {
		return 0, 0
	}
	return float64(f.Sent.W) / f.Clip.Dx(), float64(f.Sent.H) / f.Clip.Dy()
}

// extent returns the size of space s over f's sent image: the sent image
// itself, the grid, or the resized image the model reasoned in.
func (f Frame) extent(s Space) (Size, error) {
	switch s.Kind {
	case ImageSpace:
		return f.Sent, nil
	case GridSpace:
		if s.Grid <= 0 {
			return Size{}, fmt.Errorf("space %v: grid size must be positive", s)
		}
		return Size{s.Grid, s.Grid}, nil
	case ResizedSpace:
		if s.Resized.Empty() {
			return Size{}, fmt.Errorf("space %v: resized image size is empty", s)
		}
		return s.Resized, nil
	}
	return Size{}, fmt.Errorf("unknown coordinate space kind %d", s.Kind)
}

// toImage converts p from space s to continuous sent-image coordinates in
// the closed range [0, Sent.W] x [0, Sent.H], checking p against the bounds
// of s. The frame must already be checked.
func (f Frame) toImage(p actions.Point, s Space) (actions.Point, error) {
	if !finite(p.X) || !finite(p.Y) {
		return actions.Point{}, fmt.Errorf("%w: point %v is not a pair of finite numbers", actions.ErrInvalid, p)
	}
	e, err := f.extent(s)
	if err != nil {
		return actions.Point{}, err
	}
	w, h := float64(e.W), float64(e.H)
	if p.X < 0 || p.Y < 0 || p.X > w || p.Y > h {
		return actions.Point{}, &boundsError{p: p, s: s, size: e}
	}
	sw, sh := float64(f.Sent.W), float64(f.Sent.H)
	img := p
	if s.Kind != ImageSpace {
		// v*Sent/Grid on a grid, v*Sent/Resized for a resized image. This
		// is Google's reference mapping for Gemini (int(v / 1000 * width))
		// once ToCSS takes the floor; multiplying first keeps the result
		// exact whenever it is a whole pixel.
		img = actions.Pt(p.X*sw/w, p.Y*sh/h)
	}
	// Rounding may push a point just inside the far edge onto it; the edge
	// itself is the limit.
	img.X = math.Min(img.X, sw)
	img.Y = math.Min(img.Y, sh)
	return img, nil
}

// ToImage converts p from the model's space s to pixels of the sent image.
// A point outside the image the model was shown (in its own space: the sent
// image, the grid, or the resized image) is an error wrapping ErrOutOfBounds
// that names the point, the space and the size; a negative coordinate is
// outside too. Only the far edge itself (x == W, or v == Grid) is accepted,
// and it clamps to the last pixel. NaN and infinite coordinates are an error
// wrapping actions.ErrInvalid. The result lies in [0, Sent.W) x [0, Sent.H).
func (f Frame) ToImage(p actions.Point, s Space) (actions.Point, error) {
	if err := f.check(); err != nil {
		return actions.Point{}, err
	}
	img, err := f.toImage(p, s)
	if err != nil {
		return actions.Point{}, err
	}
	if img.X >= float64(f.Sent.W) {
		img.X = float64(f.Sent.W - 1)
	}
	if img.Y >= float64(f.Sent.H) {
		img.Y = float64(f.Sent.H - 1)
	}
	return img, nil
}

// ToCSS converts p from the model's space s to CSS pixels of the viewport,
// ready for a display backend. It maps through ToImage (and fails as it
// does) to the centre of the image pixel the point falls in:
//
//	css = Clip.Min + (floor(img) + 0.5) * Clip.Size / Sent   (per axis)
//
// A zoom frame (Clip smaller than the viewport) maps into its region. The
// device pixel ratio plays no part: Sent is made from the CSS clip. The
// result always lies inside the clip, so 0 <= x < Viewport.W and
// 0 <= y < Viewport.H.
func (f Frame) ToCSS(p actions.Point, s Space) (actions.Point, error) {
	img, err := f.ToImage(p, s)
	if err != nil {
		return actions.Point{}, err
	}
	return f.pixelCentre(img), nil
}

// pixelCentre returns the CSS position of the centre of the sent-image
// pixel that img falls in. img must lie in [0, Sent.W) x [0, Sent.H) of a
// checked frame.
func (f Frame) pixelCentre(img actions.Point) actions.Point {
	c := f.Clip
	x := c.Min.X + (math.Floor(img.X)+0.5)*c.Dx()/float64(f.Sent.W)
	y := c.Min.Y + (math.Floor(img.Y)+0.5)*c.Dy()/float64(f.Sent.H)
	// The centre of the last pixel is half a pixel inside the clip; only
	// floating-point rounding could put it on the far edge.
	return actions.Pt(inside(x, c.Min.X, c.Max.X), inside(y, c.Min.Y, c.Max.Y))
}

// FromCSS converts p from CSS pixels of the viewport to the sent-image pixel
// it falls in (each coordinate rounded down), for showing where an action
// landed and for answering cursor_position. A point outside the Clip maps
// outside [0, Sent.W) x [0, Sent.H), so a caller can tell; NaN or infinite
// input gives NaN or infinite output. An invalid frame gives the zero Point.
func (f Frame) FromCSS(p actions.Point) actions.Point {
	if f.check() != nil {
		return actions.Point{}
	}
	c := f.Clip
	x := math.Floor((p.X - c.Min.X) * float64(f.Sent.W) / c.Dx())
	y := math.Floor((p.Y - c.Min.Y) * float64(f.Sent.H) / c.Dy())
	return actions.Pt(x, y)
}

// Map converts every coordinate of a, given in the model's space s, to CSS
// pixels of f's viewport:
//
//   - At, when HasAt is set (and At is cleared when it is not), to the centre
//     of the image pixel it names (see ToCSS);
//   - every point of Path, the same way;
//   - Region (a zoom region), corner by corner, as a CSS rectangle; its
//     corners may lie on the far edge of the image;
//   - the scroll distances DeltaX and DeltaY, scaled from model units to CSS
//     pixels (on a grid, the distance is a fraction of the image first, as
//     Gemini normalizes its scroll magnitude).
//
// An error names the field: "path[2]: point (1100,20) is outside the
// 1024x640 screenshot". Actions without coordinates pass through unchanged.
// Map never modifies a: the Path of the result is a new slice.
func (f Frame) Map(a actions.Action, s Space) (Mapped, error) {
	m := a
	hasZoom := a.Kind == actions.Zoom || a.Region != (actions.Rect{})
	if !a.HasAt && a.Path == nil && !hasZoom && a.DeltaX == 0 && a.DeltaY == 0 {
		m.At = actions.Point{}
		return Mapped{Action: m}, nil
	}
	if err := f.check(); err != nil {
		return Mapped{}, err
	}
	if _, err := f.extent(s); err != nil {
		return Mapped{}, err
	}
	if a.HasAt {
		at, err := f.ToCSS(a.At, s)
		if err != nil {
			return Mapped{}, fmt.Errorf("at: %w", err)
		}
		m.At = at
	} else {
		m.At = actions.Point{}
	}
	if a.Path != nil {
		m.Path = make([]actions.Point, len(a.Path))
		for i, p := range a.Path {
			q, err := f.ToCSS(p, s)
			if err != nil {
				return Mapped{}, fmt.Errorf("path[%d]: %w", i, err)
			}
			m.Path[i] = q
		}
	}
	if hasZoom {
		r, err := f.mapRegion(a.Region, s)
		if err != nil {
			return Mapped{}, fmt.Errorf("region: %w", err)
		}
		m.Region = r
	}
	if a.DeltaX != 0 || a.DeltaY != 0 {
		dx, dy, err := f.mapDelta(a.DeltaX, a.DeltaY, s)
		if err != nil {
			return Mapped{}, err
		}
		m.DeltaX, m.DeltaY = dx, dy
	}
	return Mapped{Action: m}, nil
}

// mapRegion converts a rectangle in space s to CSS pixels, corner by corner
// and without snapping to pixel centres, so that a region reaching the far
// edge of the image reaches the far edge of the clip.
func (f Frame) mapRegion(r actions.Rect, s Space) (actions.Rect, error) {
	lo, err := f.toImage(r.Min, s)
	if err != nil {
		return actions.Rect{}, fmt.Errorf("min corner: %w", err)
	}
	hi, err := f.toImage(r.Max, s)
	if err != nil {
		return actions.Rect{}, fmt.Errorf("max corner: %w", err)
	}
	c := f.Clip
	kx, ky := c.Dx()/float64(f.Sent.W), c.Dy()/float64(f.Sent.H)
	out := actions.Rect{
		Min: actions.Pt(math.Min(c.Min.X+lo.X*kx, c.Max.X), math.Min(c.Min.Y+lo.Y*ky, c.Max.Y)),
		Max: actions.Pt(math.Min(c.Min.X+hi.X*kx, c.Max.X), math.Min(c.Min.Y+hi.Y*ky, c.Max.Y)),
	}
	if out.Empty() {
		return actions.Rect{}, fmt.Errorf("%w: region %v is empty: it needs min < max on both axes", actions.ErrInvalid, r)
	}
	return out, nil
}

// mapDelta converts a scroll distance in space s to CSS pixels.
func (f Frame) mapDelta(dx, dy float64, s Space) (float64, float64, error) {
	if !finite(dx) || !finite(dy) {
		return 0, 0, fmt.Errorf("%w: scroll distance (%g,%g) is not a pair of finite numbers", actions.ErrInvalid, dx, dy)
	}
	e, err := f.extent(s)
	if err != nil {
		return 0, 0, err
	}
	// Model units -> sent-image pixels -> CSS pixels, per axis.
	cx := dx * float64(f.Sent.W) / float64(e.W) * f.Clip.Dx() / float64(f.Sent.W)
	cy := dy * float64(f.Sent.H) / float64(e.H) * f.Clip.Dy() / float64(f.Sent.H)
	if !finite(cx) || !finite(cy) {
		return 0, 0, fmt.Errorf("%w: scroll distance (%g,%g) is too large", actions.ErrInvalid, dx, dy)
	}
	return cx, cy, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// inside returns v limited to [lo, hi). It only corrects floating-point
// rounding at the edges; callers guarantee v is already within a hair.
func inside(v, lo, hi float64) float64 {
	if v < lo {
		return lo
	}
	if v >= hi {
		return math.Nextafter(hi, lo)
	}
	return v
}
