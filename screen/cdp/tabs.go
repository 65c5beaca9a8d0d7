package cdp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// tab is one page of a display: the one NewDisplay opened, or one the page
// opened (a link with target=_blank, window.open) or the display opened
// when the last one closed. Each has its own protocol session, page state
// and renderer; the display's ctx, t, state and r are those of the active
// tab.
type tab struct {
	id     target.ID
	ctx    context.Context    // chromedp's handle on the tab
	cancel context.CancelFunc // closes the tab (and, for the first tab of a Screencast display, its browser context)
	t      cdp.Session
	state  *pageState
	r      renderer
	fenced int64   // the display's fenced, while the tab is not active
	zoom   float64 // page zoom (Ctrl+plus), 1 when none
	ready  bool    // setup has run
}

// notes are display-level notes for the model, taken with the next capture.
type notes struct {
	mu    sync.Mutex
	items []string
}

func (n *notes) add(format string, args ...any) {
	n.mu.Lock()
	n.items = append(n.items, fmt.Sprintf(format, args...))
	n.mu.Unlock()
}

func (n *notes) take() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.items
	n.items = nil
	return s
}

// activate makes tb the active tab. It runs under mu.
func (d *Display) activate(tb *tab) {
	d.tabMu.Lock()
	defer d.tabMu.Unlock()
	if d.cur != nil {
		d.cur.fenced = d.fenced
	}
	d.cur = tb
	d.ctx, d.t, d.state, d.r, d.fenced = tb.ctx, tb.t, tb.state, tb.r, tb.fenced
	d.pointer, d.buttons = actions.Point{}, 0
}

// activeState returns the active tab's page state, for readers that do not
// hold mu.
func (d *Display) activeState() *pageState {
	d.tabMu.RLock()
	defer d.tabMu.RUnlock()
	return d.state
}

// activeTab returns the active tab's session, page state and page zoom, for
// readers that do not hold mu (HitTest). A point at p of the viewport is
// at p/zoom in the page's CSS px.
func (d *Display) activeTab() (cdp.Session, *pageState, float64) {
	d.tabMu.RLock()
	defer d.tabMu.RUnlock()
	z := 1.0
	if d.cur != nil && d.cur.zoom > 0 {
		z = d.cur.zoom
	}
	return d.t, d.state, z
}

// zoom returns the active tab's page zoom factor (1: none).
func (d *Display) zoom() float64 {
	if d.cur == nil || d.cur.zoom == 0 {
		return 1
	}
	return d.cur.zoom
}

// openTab makes tb, attached already, a tab of the display: it makes it
// the active tab, gives it a renderer and sets it up.
func (d *Display) openTab(ctx context.Context, tb *tab) error {
	if d.frames {
		tb.r = &frameControl{d: d}
	} else {
		tb.r = &screencast{d: d, tab: tb}
	}
	tb.zoom = 1
	d.tabs = append(d.tabs, tb)
	d.dl.addState(tb.state)
	d.activate(tb)
	if err := d.setup(ctx); err != nil {
		return err
	}
	tb.ready = true
	// A page that opened before the display attached has sent its
	// navigation events already.
	if tree, err := call(ctx, d, page.GetFrameTree, cdp.Empty{}); err == nil && tree.FrameTree != nil && tree.FrameTree.Frame != nil {
		f := tree.FrameTree.Frame
		tb.state.setMain(f.ID, f.URL+f.URLFragment)
	}
	return nil
}

// attach attaches the display to the page target id, which must be in the
// display's browser context, and makes it the active tab.
func (d *Display) attach(ctx context.Context, id target.ID) error {
	st := d.newState()
	tctx, tcancel := chromedp.NewContext(d.bctx, chromedp.WithTargetID(id), chromedp.WithListener(st.onEvent),
		chromedp.WithListener(d.onTabEvent))
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(tctx) }()
	var err error
	select {
	case err = <-started:
	case <-ctx.Done():
		tcancel()
		<-started
		err = context.Cause(ctx)
	}
	if err != nil {
		tcancel()
		return fmt.Errorf("attach to tab: %w", err)
	}
	tb := &tab{id: id, ctx: tctx, cancel: tcancel, t: chromedp.FromContext(tctx).Target, state: st}
	d.all = append(d.all, tb)
	return d.openTab(ctx, tb)
}

// detached reports whether tb's page has closed.
func (tb *tab) detached() bool {
	ch, err := chromedp.Detached(tb.ctx)
	if err != nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (d *Display) firstClosed() bool {
	return d.first != nil && d.first.detached()
}

// syncTabs brings the display's tabs up to date before an action or a
// capture: it drops tabs that closed (a page's window.close()), opening
// about:blank if none is left, and follows tabs the pages opened. It runs
// under mu; each change leaves a note with the list of tabs.
func (d *Display) syncTabs(ctx context.Context) error {
	if d.bctx == nil || d.browserLost() {
		return nil // unit tests; check() reports a lost browser
	}
	changed := false
	for _, tb := range slices.Clone(d.tabs) {
		if !tb.detached() || tb.state.isCrashed() {
			continue
		}
		d.tabs = slices.DeleteFunc(d.tabs, func(x *tab) bool { return x == tb })
		changed = true
		if tb == d.cur {
			d.notes.add("The active tab (%s) was closed by its page.", tb.state.currentURL())
			if len(d.tabs) > 0 {
				d.activate(d.tabs[len(d.tabs)-1])
			}
		}
	}
	if len(d.tabs) == 0 && changed {
		if err := d.blankTab(ctx); err != nil {
			return err
		}
	}
	// Tabs the display's pages opened, in the order they opened.
	for {
		id, url, ok := d.nextOpened()
		if !ok {
			break
		}
		if err := d.attach(ctx, id); err != nil {
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return err
			}
			d.notes.add("A page opened a new tab (%s), but it could not be followed: %v", url, err)
			continue
		}
		changed = true
		d.notes.add("A new tab opened and is now the active tab (tab %d).", len(d.tabs)-1)
	}
	if changed {
		d.noteTabs(ctx)
	}
	return nil
}

// nextOpened returns a page target that a page of the display opened and
// the display has not attached to yet.
func (d *Display) nextOpened() (target.ID, string, bool) {
	for _, tb := range d.tabs {
		for {
			info, ok := tb.state.takeOpened()
			if !ok {
				break
			}
			if d.known(info.TargetID) {
				continue
			}
			return info.TargetID, info.URL, true
		}
	}
	return "", "", false
}

func (d *Display) known(id target.ID) bool {
	return slices.ContainsFunc(d.all, func(tb *tab) bool { return tb.id == id })
}

// blankTab opens about:blank in a new tab of the display's browser context
// and makes it the active tab.
func (d *Display) blankTab(ctx context.Context) error {
	if err := d.newTab(ctx, "about:blank"); err != nil {
		return fmt.Errorf("open a blank tab: %w", err)
	}
	d.notes.add("No tab was left open, so a blank tab was opened.")
	return nil
}

// newTab opens url in a new tab of the display's browser context (a
// frame-controlled window of its own in FrameControl mode) and makes it
// the active tab.
func (d *Display) newTab(ctx context.Context, url string) error {
	res, err := browserCall(ctx, d, target.CreateTarget, tabParams(url, d.bcID, d.cfg.Viewport, d.frames))
	if err != nil {
		return err
	}
	return d.attach(ctx, res.TargetID)
}

// reopen replaces the active tab, whose window no longer draws
// (errWedged), by a new window at the same URL and page zoom, in the same
// place among the tabs, and closes the old one. The model is told: what
// the page held (typed text, scroll position) is lost.
func (d *Display) reopen(ctx context.Context) error {
	old := d.cur
	if !d.frames || old == nil || d.browser == nil {
		return screen.ErrUnsupported
	}
	url := cmp.Or(old.state.currentURL(), "about:blank")
	if err := d.newTab(ctx, url); err != nil {
		return fmt.Errorf("reopen the tab: %w", err)
	}
	tb := d.cur
	d.tabs = slices.DeleteFunc(d.tabs, func(x *tab) bool { return x == tb })
	if i := slices.Index(d.tabs, old); i >= 0 {
		d.tabs[i] = tb
	} else {
		d.tabs = append(d.tabs, tb)
	}
	if old.zoom > 0 && old.zoom != 1 {
		tb.zoom = old.zoom
		if err := d.r.zoomed(ctx); err != nil {
			return fmt.Errorf("reopen the tab: %w", err)
		}
	}
	// An error leaves the old window open but unused; it goes with the
	// display's browser context.
	_, _ = browserCall(ctx, d, target.CloseTarget, target.CloseTargetParams{TargetID: old.id})
	d.log.WarnContext(ctx, "a window stopped drawing; its page was opened again in a new one")
	d.notes.add("The browser window stopped drawing, so its page (%s) was opened again in a new window: what the page held (typed text, scroll position) was lost.", clipText(url, 200))
	return nil
}

// tabInfo describes the display's tabs: "[0] Title — https://... (active)".
func (d *Display) tabInfo(ctx context.Context) []string {
	titles := map[target.ID]target.Info{}
	if d.browser != nil {
		if res, err := browserCall(ctx, d, target.GetTargets, target.GetTargetsParams{}); err == nil {
			for _, ti := range res.TargetInfos {
				titles[ti.TargetID] = *ti
			}
		}
	}
	lines := make([]string, 0, len(d.tabs))
	for i, tb := range d.tabs {
		info := titles[tb.id]
		url := info.URL
		if url == "" {
			url = tb.state.currentURL()
		}
		title := strings.TrimSpace(info.Title)
		if title == "" || title == url {
			title = "(untitled)"
		}
		line := fmt.Sprintf("[%d] %s — %s", i, clipText(title, 80), clipText(url, 200))
		if tb == d.cur {
			line += " (active)"
		}
		lines = append(lines, line)
	}
	return lines
}

// noteTabs leaves a note listing the tabs.
func (d *Display) noteTabs(ctx context.Context) {
	d.notes.add("Open tabs (switch_tab and close_tab take the number): %s", strings.Join(d.tabInfo(ctx), "; "))
}

// switchTab makes tab i the active one.
func (d *Display) switchTab(ctx context.Context, i int) error {
	if i < 0 || i >= len(d.tabs) {
		return fmt.Errorf("%w: there is no tab %d (there are %d tabs, numbered from 0)", actions.ErrInvalid, i, len(d.tabs))
	}
	if d.tabs[i] != d.cur {
		d.activate(d.tabs[i])
		if d.browser != nil {
			// Errors leave the tab usable: it has a window of its own.
			_, _ = browserCall(ctx, d, target.ActivateTarget, target.ActivateTargetParams{TargetID: d.cur.id})
		}
	}
	d.noteTabs(ctx)
	return nil
}

// closeTab closes tab i. Closing the active tab activates the one before
// it; closing the last tab opens about:blank.
func (d *Display) closeTab(ctx context.Context, i int) error {
	if i < 0 || i >= len(d.tabs) {
		return fmt.Errorf("%w: there is no tab %d (there are %d tabs, numbered from 0)", actions.ErrInvalid, i, len(d.tabs))
	}
	tb := d.tabs[i]
	if d.browser == nil {
		return fmt.Errorf("close tab %d: %w", i, screen.ErrUnsupported)
	}
	if _, err := browserCall(ctx, d, target.CloseTarget, target.CloseTargetParams{TargetID: tb.id}); err != nil {
		return fmt.Errorf("close tab %d: %w", i, err)
	}
	d.tabs = slices.Delete(d.tabs, i, i+1)
	if len(d.tabs) == 0 {
		if err := d.blankTab(ctx); err != nil {
			return err
		}
	} else if tb == d.cur {
		d.activate(d.tabs[max(i-1, 0)])
	}
	d.noteTabs(ctx)
	return nil
}

// clipText shortens s to at most n runes.
func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
