package screen

import (
	"fmt"

	"github.com/spotter-harness/spotter/actions"
)

// ClampRegion returns the CSS rectangle a capture of region shows on a
// viewport of size vp: the whole viewport for the zero Rect, otherwise
// region cut to the viewport. A region with a corner that is not a finite
// number, or whose part inside the viewport is less than one CSS pixel wide
// or tall, is an error wrapping actions.ErrInvalid. Every display backend
// clamps a zoom region (CaptureOptions.Region) with it.
func ClampRegion(region actions.Rect, vp Size) (actions.Rect, error) {
	full := actions.Rect{Max: actions.Pt(float64(vp.W), float64(vp.H))}
	if region == (actions.Rect{}) {
		return full, nil
	}
	in := region
	if !finite(in.Min.X) || !finite(in.Min.Y) || !finite(in.Max.X) || !finite(in.Max.Y) {
		return full, fmt.Errorf("%w: region %v", actions.ErrInvalid, region)
	}
	in.Min.X, in.Min.Y = max(in.Min.X, 0), max(in.Min.Y, 0)
	in.Max.X, in.Max.Y = min(in.Max.X, full.Max.X), min(in.Max.Y, full.Max.Y)
	if in.Dx() < 1 || in.Dy() < 1 {
		return full, fmt.Errorf("%w: region %v is not inside the %dx%d viewport", actions.ErrInvalid, region, vp.W, vp.H)
	}
	return in, nil
}
