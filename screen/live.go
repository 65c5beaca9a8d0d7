package screen

import (
	"context"
	"time"
)

// LiveFrame is one picture of a display's screen as it changes, between
// the screenshots of the loop and during them, for people watching (a
// panel's live view). It is not a Shot: it has no Frame, it is never
// recorded, and no model sees it.
type LiveFrame struct {
	Data   []byte
	Format Format
	Size   Size      // the image's size in px
	Time   time.Time // when the display drew it
}

// LiveOptions say how a display shows itself live.
type LiveOptions struct {
	// Size is the size of the frames: the size of the screenshots the
	// model is sent, so that a point of a frame is a point of a
	// screenshot.
	Size Size
	// Interval is the shortest time between two frames; zero means
	// DefaultLiveInterval.
	Interval time.Duration
	// Quality is the JPEG quality of the frames; zero means 60.
	Quality int
}

// DefaultLiveInterval is one frame per 66 ms, 15 frames per second.
const DefaultLiveInterval = time.Second / 15

// A Watcher is a display that shows its screen live.
type Watcher interface {
	// Watch calls each with a frame whenever the screen has changed, at
	// most one per o.Interval and none while nothing changes, until ctx
	// ends (it then returns ctx's cause) or the display closes or dies
	// (an error wrapping ErrGone). each must return at once: it runs on
	// the display's own goroutines, a capture's among them. A display
	// watches for one caller at a time.
	Watch(ctx context.Context, o LiveOptions, each func(LiveFrame)) error
}
