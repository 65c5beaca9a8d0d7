package wiring

import (
	"context"
	"fmt"
	"sync"

	"github.com/spotter-harness/spotter/screen"
)

// Watch shows the display live (screen.Watcher) for as long as ctx lasts:
// the current display's live view, and after a restart the new one's. A
// display that cannot show itself live (a desktop, a Playwright browser)
// answers an error wrapping screen.ErrUnsupported; a closed one, an error
// wrapping screen.ErrGone.
func (d *OpenedDisplay) Watch(ctx context.Context, o screen.LiveOptions, each func(screen.LiveFrame)) error {
	for {
		changed, closed := d.swaps.next()
		if closed {
			return fmt.Errorf("watch: the display is closed: %w", screen.ErrGone)
		}
		if ref := d.current.Load(); ref != nil {
			w, ok := ref.d.(screen.Watcher)
			if !ok {
				return fmt.Errorf("watch: %w: this display has no live view", screen.ErrUnsupported)
			}
			err := w.Watch(ctx, o, each)
			if ctx.Err() != nil {
				return err
			}
			d.log.Debug("live view ended; waiting for the display to start anew", "err", err)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-changed:
		}
	}
}

// swaps tells a watch that the display it watched was replaced (a
// restart) or closed.
type swaps struct {
	mu     sync.Mutex
	ch     chan struct{}
	closed bool
}

// next returns a channel closed at the next swap, and whether the display
// is closed for good.
func (s *swaps) next() (<-chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch, s.closed
}

// swap says that the current display changed; final, that it is closed
// for good.
func (s *swaps) swap(final bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = s.closed || final
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
