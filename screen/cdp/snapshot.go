package cdp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chromedp/cdproto/cdp"

	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/internal/axtext"
	"github.com/spotter-harness/spotter/screen/internal/hitjs"
)

// Snapshot returns the active tab's accessibility tree as Chromium
// computes it (roles, accessible names, states, the values of fields but
// never of password fields), as text with a reference for each element
// (screen.Snapshot). Like HitTest it reads the page and changes nothing,
// takes at most hitjs.Timeout, and waits for a Perform or Capture in
// progress to end. The main frame's document only: iframes show as
// elements without their content.
func (d *Display) Snapshot(ctx context.Context) (screen.Snapshot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ctx, cancel, c, page, err := d.refPage(ctx)
	defer cancel()
	if err != nil {
		return screen.Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	s, err := d.refs.Snapshot(ctx, c, page)
	if err != nil {
		return screen.Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	s.URL = d.activeState().currentURL()
	return s, nil
}

// Locate finds the element of a reference from Snapshot on the active
// tab and returns its visible box (CSS pixels of the viewport), scrolling
// it into view first when none of it is in view. A reference whose
// element is gone, or of another tab, is an error wrapping
// screen.ErrStaleRef; an element with no box (hidden) is an error that
// says so.
func (d *Display) Locate(ctx context.Context, ref string) (screen.Located, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ctx, cancel, c, page, err := d.refPage(ctx)
	defer cancel()
	if err != nil {
		return screen.Located{}, fmt.Errorf("locate %s: %w", ref, err)
	}
	return d.refs.Locate(ctx, c, ref, page, d.zoom())
}

// refPage bounds ctx by hitjs.Timeout and returns it with a Caller of
// the active tab's session and the key of its document for references.
// It runs under mu; the caller must call cancel.
func (d *Display) refPage(ctx context.Context) (context.Context, context.CancelFunc, axtext.Caller, string, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, hitjs.Timeout,
		fmt.Errorf("the page did not answer within %v: %w", hitjs.Timeout, ErrUnresponsive))
	if err := d.check(); err != nil {
		return ctx, cancel, nil, "", err
	}
	d.tabMu.RLock()
	cur, top, state := d.cur, d.t, d.state
	d.tabMu.RUnlock()
	if dlg := state.openDialog(); dlg != "" {
		return ctx, cancel, nil, "", fmt.Errorf("the page is blocked by %s: %w", dlg, errBlocked)
	}
	tab := ""
	if cur != nil {
		tab = string(cur.id)
	}
	c := pageCaller{d, top}
	key, err := axtext.PageKey(ctx, c, tab)
	return ctx, cancel, c, key, err
}

// pageCaller sends the commands of snapshots and references to a tab's
// session as a hit-test's (hitCall: bounded, ended by a dialog).
type pageCaller struct {
	d *Display
	s cdp.Session
}

func (p pageCaller) Call(ctx context.Context, method string, params map[string]any, result any) error {
	if params == nil {
		params = map[string]any{}
	}
	raw, err := hitCall(ctx, p.d, p.s, cdp.Command[map[string]any, json.RawMessage]{Method: method}, params)
	if err != nil {
		return err
	}
	return axtext.Decode(raw, result)
}
