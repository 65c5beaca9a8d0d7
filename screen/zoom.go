package screen

import (
	"fmt"
	"slices"

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

// ZoomLevels are Chromium's page zoom steps.
var ZoomLevels = []float64{0.25, 1.0 / 3, 0.5, 2.0 / 3, 0.75, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5}

// ZoomChord returns the page zoom that the chord keys sets from the zoom
// cur, if keys is a browser's zoom shortcut: Ctrl (or Meta) with plus,
// equals, minus or 0. The browser displays zoom the page as a browser with
// a window would (screen/cdp), or refuse the shortcut in words
// (screen/playwright), rather than send the keys to the page, where they
// would do nothing.
func ZoomChord(keys actions.Chord, cur float64) (float64, bool) {
	if len(keys) < 2 {
		return 0, false
	}
	mods, key := keys[:len(keys)-1], keys[len(keys)-1]
	ctrl := false
	for _, m := range mods {
		switch m {
		case actions.Control, actions.Meta:
			ctrl = true
		case actions.Shift:
		default:
			return 0, false
		}
	}
	if !ctrl {
		return 0, false
	}
	switch key {
	case "+", "=", "NumpadAdd":
		for _, z := range ZoomLevels {
			if z > cur+1e-6 {
				return z, true
			}
		}
		return cur, true
	case "-", "_", "NumpadSubtract":
		for _, z := range slices.Backward(ZoomLevels) {
			if z < cur-1e-6 {
				return z, true
			}
		}
		return cur, true
	case "0", "Numpad0":
		return 1, true
	}
	return 0, false
}
