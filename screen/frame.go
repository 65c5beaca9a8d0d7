// Package screen holds screenshot geometry and coordinate mapping: the Frame
// record that every screenshot carries, the coordinate spaces models answer in,
// the per-model image size rules, and the Mapped form of an action that a
// display backend performs. Backends live in subpackages (screen/cdp, ...).
//
// Coordinate spaces, from the model's side to the display's:
//
//	model space --(grid or resize)--> image space (what was sent) --(Frame scale)--> CSS px --(DPR)--> device px
//
// A Frame knows the geometry of one screenshot, so an action is always mapped
// with the geometry of the screenshot the model actually saw.
package screen

import (
	"time"

	"github.com/spotter-harness/spotter/actions"
)

// Size is a width and height in pixels.
type Size struct {
	W int `json:"w"`
	H int `json:"h"`
}

// Empty reports whether s has no area.
func (s Size) Empty() bool { return s.W <= 0 || s.H <= 0 }

// Format is an image encoding.
type Format string

const (
	PNG  Format = "png"
	JPEG Format = "jpeg"
)

// MIME returns the media type of f.
func (f Format) MIME() string {
	if f == JPEG {
		return "image/jpeg"
	}
	return "image/png"
}

// Frame records the geometry of one screenshot. It is plain data: it is stored
// in traces and used later to map the model's coordinates back to the display.
type Frame struct {
	ID   string    `json:"id"`   // unique within a session, e.g. "f0007"
	Time time.Time `json:"time"` // when it was captured
	URL  string    `json:"url,omitempty"`

	Viewport Size          `json:"viewport"`        // CSS pixels of the whole display
	DPR      float64       `json:"dpr"`             // device pixels per CSS pixel
	Clip     actions.Rect  `json:"clip"`            // CSS region captured: the viewport, or a zoom region
	Capture  Size          `json:"capture"`         // device pixels the clip covers (Clip * DPR)
	Sent     Size          `json:"sent"`            // the image sent to the model
	Scroll   actions.Point `json:"scroll,omitzero"` // page scroll offset, CSS px
	Zoom     float64       `json:"zoom,omitzero"`   // page zoom factor; 0 or 1 means none
	Format   Format        `json:"format"`

	// Settle says how the display came to rest before the capture.
	Settle Settle `json:"settle"`
}

// Zoomed reports whether f shows a region rather than the whole viewport.
func (f Frame) Zoomed() bool {
	return f.Clip.Min != (actions.Point{}) || f.Clip.Dx() != float64(f.Viewport.W) || f.Clip.Dy() != float64(f.Viewport.H)
}

// Settle describes the wait before a capture.
type Settle struct {
	Waited   time.Duration `json:"waited"`
	TimedOut bool          `json:"timed_out,omitzero"` // the display never went quiet; the capture was taken anyway
	Reason   string        `json:"reason,omitempty"`   // what was still busy when the wait timed out
}

// Shot is a screenshot: the encoded image and its Frame.
type Shot struct {
	Frame Frame
	Data  []byte // encoded as Frame.Format
	// Events are things the display noticed since the previous capture, in
	// plain words for the model: "a new tab opened: https://...", a dialog.
	Events []string
	// Log is what the page logged and requested since the previous
	// capture, for the run's record; it is never shown to the model.
	Log PageLog
}

// CaptureOptions says what image to produce.
type CaptureOptions struct {
	Size    Size         // the image size sent to the model; zero means the clip's CSS size
	Format  Format       // default PNG
	Quality int          // JPEG quality 1..100; 0 means 80
	Region  actions.Rect // CSS region to capture; empty means the whole viewport
	// SettleTimeout bounds the wait for the display to go quiet before the
	// capture; 0 means the backend's default, negative means do not wait.
	SettleTimeout time.Duration
}

// Mapped is an action whose coordinates are CSS pixels of a display's
// viewport (At, Path, Region) and whose scroll deltas are CSS pixels. Only
// values made by Frame.Map should reach a display backend.
type Mapped struct {
	actions.Action
}
