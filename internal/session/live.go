package session

import (
	"context"
	"errors"
	"sync"

	"github.com/spotter-harness/spotter/screen"
)

// A session's live view is what people watching it see (the panel's live
// view, GET /session/:id/live): its latest screenshot at once, then every
// full screenshot the session takes (the loop's, the operator's), and,
// from a display that can show itself live (screen.Watcher: a Chromium
// display, on the host or in a sandbox), the frames of the page as it
// changes in between. The display is watched only while someone watches
// the session, by one goroutine the Manager owns, which follows the
// session's display when it is opened, started anew or closed. A watcher
// that reads slower than frames come misses the older ones, never the
// newest.

// liveHub hands a session's live frames to its watchers.
type liveHub struct {
	mu      sync.Mutex
	subs    map[chan screen.LiveFrame]bool
	stop    context.CancelFunc // ends the display's watch; nil while nobody watches
	changed chan struct{}      // closed when the session's display changes
}

// Live returns the session's live view until ctx ends: a channel that
// holds the newest frame not yet taken, its latest screenshot first.
func (s *Session) Live(ctx context.Context) <-chan screen.LiveFrame {
	ch := make(chan screen.LiveFrame, 1)
	if shot, ok := s.Shot(); ok && len(shot.Data) > 0 {
		ch <- liveShot(shot)
	}
	h := &s.live
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[chan screen.LiveFrame]bool{}
	}
	h.subs[ch] = true
	if h.stop == nil {
		wctx, stop := context.WithCancel(s.m.base)
		if s.m.goUnlessClosed(func() { s.watchLive(wctx) }) {
			h.stop = stop
		} else {
			stop()
		}
	}
	h.mu.Unlock()
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs, ch)
		if len(h.subs) == 0 && h.stop != nil {
			h.stop()
			h.stop = nil
		}
	})
	return ch
}

// liveShot is a screenshot as a live frame.
func liveShot(shot screen.Shot) screen.LiveFrame {
	size := shot.Frame.Sent
	return screen.LiveFrame{Data: shot.Data, Format: shot.Frame.Format, Size: size, Time: shot.Frame.Time}
}

// offer hands f to every watcher, in place of a frame it has not taken.
// It returns at once: displays call it from their own goroutines.
func (h *liveHub) offer(f screen.LiveFrame) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case <-ch: // an older frame the watcher has not taken
		default:
		}
		ch <- f
	}
}

// displayChanged tells the watch that the session's display was opened,
// started anew or closed.
func (h *liveHub) displayChanged() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
}

// next returns a channel that is closed at the next change of display.
func (h *liveHub) next() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	return h.changed
}

// watchLive watches the session's display until ctx ends: the display
// that is open, and after a change the new one. A display that cannot
// show itself live leaves the view to the session's screenshots.
func (s *Session) watchLive(ctx context.Context) {
	o := screen.LiveOptions{Size: liveSize(s.spec.image())}
	for {
		changed := s.live.next()
		s.mu.Lock()
		g := s.disp
		s.mu.Unlock()
		if g != nil {
			if w, ok := g.current().(screen.Watcher); ok {
				err := w.Watch(ctx, o, s.live.offer)
				if ctx.Err() != nil {
					return
				}
				if !errors.Is(err, screen.ErrUnsupported) {
					s.log.Debug("live view ended", "err", err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// goUnlessClosed runs f on a goroutine the Manager owns, unless Close has
// begun (Close waits for the goroutines that began before it), and
// reports whether it did.
func (m *Manager) goUnlessClosed(f func()) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.wg.Go(f)
	return true
}

// maxLiveEdge bounds the long edge of a display's own live frames: the
// panel shows them smaller, and a browser captures an 800x500 one for
// about half of a 1280x800 one's time (measured; docs/PERFORMANCE.md,
// "Live view").
// The session's screenshots are handed on at their own size.
const maxLiveEdge = 800

// liveSize is the size of a session's live frames for screenshots of size
// img.
func liveSize(img screen.Size) screen.Size {
	long := max(img.W, img.H)
	if long <= maxLiveEdge {
		return img
	}
	return screen.Size{W: max(1, img.W*maxLiveEdge/long), H: max(1, img.H*maxLiveEdge/long)}
}
