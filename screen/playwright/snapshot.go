package playwright

import (
	"context"
	"fmt"

	pw "github.com/playwright-community/playwright-go"

	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/internal/axtext"
	"github.com/spotter-harness/spotter/screen/internal/hitjs"
)

// Snapshot returns the active tab's accessibility tree as Chromium
// computes it, as text with a reference for each element
// (screen.Snapshot), as screen/cdp's Display does and with the same CDP
// commands, over a CDP session of the page (Chromium only, launched or
// connected). It reads the page and changes nothing, waits for a Perform
// or Capture in progress, and takes at most hitjs.Timeout. The main
// frame's document only.
func (d *Display) Snapshot(ctx context.Context) (screen.Snapshot, error) {
	var s screen.Snapshot
	err := d.onPage(ctx, func(ctx context.Context, c axtext.Caller, page string) error {
		var err error
		if s, err = d.refs.Snapshot(ctx, c, page); err == nil {
			s.URL = d.tab().page.URL()
		}
		return err
	})
	if err != nil {
		return screen.Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	return s, nil
}

// Locate finds the element of a reference from Snapshot on the active
// tab and returns its visible box (CSS pixels of the viewport), scrolling
// it into view first when none of it is in view, as screen/cdp's Display
// does. A reference whose element is gone, or of another tab or page, is
// an error wrapping screen.ErrStaleRef.
func (d *Display) Locate(ctx context.Context, ref string) (screen.Located, error) {
	var l screen.Located
	err := d.onPage(ctx, func(ctx context.Context, c axtext.Caller, page string) error {
		var err error
		l, err = d.refs.Locate(ctx, c, ref, page, 1)
		return err
	})
	if err != nil {
		return screen.Located{}, err
	}
	return l, nil
}

// onPage runs f with a Caller of the active tab's CDP session and the key
// of its document, as a hit-test runs (inspect).
func (d *Display) onPage(ctx context.Context, f func(ctx context.Context, c axtext.Caller, page string) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dl, open := d.Dialog(); open {
		return fmt.Errorf("%s blocks the page", dl.String())
	}
	return d.run(ctx, hitjs.Timeout, func(ctx context.Context) error {
		s, err := d.cdpSession()
		if err != nil {
			return err
		}
		c := sessionCaller{s}
		page, err := axtext.PageKey(ctx, c, fmt.Sprintf("%p", d.tab()))
		if err != nil {
			return err
		}
		return f(ctx, c, page)
	})
}

// sessionCaller sends CDP commands over a Playwright CDP session.
type sessionCaller struct{ s pw.CDPSession }

func (c sessionCaller) Call(_ context.Context, method string, params map[string]any, result any) error {
	res, err := c.s.Send(method, params)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return axtext.Decode(res, result)
}
