package playwright

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	pw "github.com/playwright-community/playwright-go"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen/internal/hitjs"
)

// tab is one page of a display: the one NewDisplay opened, one a page
// opened (a link with target=_blank, window.open), or a blank one the
// display opened when the last one closed. Each has its own page state.
type tab struct {
	page  pw.Page
	state *pageState
	cdp   pw.CDPSession // for hit-tests; opened by the first, in a call that holds busy
}

// tab returns the active tab.
func (d *Display) tab() *tab { return d.cur.Load() }

// newTab watches page's events and returns it as a tab. It runs in a call
// that holds busy. The tab's CDP session (for hit-tests) also reports the
// new windows the page is about to open (Page.windowOpen), which Playwright
// announces as pages only a little later: Capture waits for them.
func (d *Display) newTab(page pw.Page) *tab {
	st := newPageState(d.b.cfg.DismissDialogs)
	st.watch(page)
	d.plog.watch(page)
	tb := &tab{page: page, state: st}
	if s, err := d.bctx.NewCDPSession(page); err == nil {
		s.On("Page.windowOpen", func(map[string]any) { d.opening.Add(1) })
		if err := cdpCall(s, "Page.enable", nil, nil); err != nil {
			d.b.log.Debug("no window-open events", "err", err)
		}
		// Open select menus drawn in the page, as screen/cdp draws them.
		if err := cdpCall(s, "Page.addScriptToEvaluateOnNewDocument", map[string]any{
			"source": hitjs.SelectMenu, "worldName": hitjs.SelectWorld, "runImmediately": true,
		}, nil); err != nil {
			d.b.log.Warn("select menus will not show", "err", err)
		}
		tb.cdp = s
	}
	return tb
}

// awaitOpening waits, until deadline, for the pages that the display's
// pages announced they open to be added, and reports whether a tab opened
// or closed since the last syncTabs. A window that never comes (a popup
// the browser blocked) is forgotten after the wait.
func (d *Display) awaitOpening(ctx context.Context, deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for d.opening.Load() > 0 && len(d.pendingPages()) == 0 {
		select {
		case <-d.addedCh:
		case <-t.C:
			d.opening.Store(0)
			return d.tabsChanged()
		case <-ctx.Done():
			return false
		case <-d.closed:
			return false
		}
	}
	return d.tabsChanged()
}

// pageAdded records a page the browser context announced; syncTabs
// follows it. Playwright calls it on the goroutine that reads the
// driver's messages, so it must not wait for anything that waits for a
// Playwright call: addedMu is never held across one.
func (d *Display) pageAdded(p pw.Page) {
	d.addedMu.Lock()
	d.added = append(d.added, p)
	d.addedMu.Unlock()
	select {
	case d.addedCh <- struct{}{}:
	default:
	}
}

// pendingPages returns the pages announced since the last syncTabs.
func (d *Display) pendingPages() []pw.Page {
	d.addedMu.Lock()
	defer d.addedMu.Unlock()
	return slices.Clone(d.added)
}

// takeAdded returns the pages announced since the last call.
func (d *Display) takeAdded() []pw.Page {
	d.addedMu.Lock()
	defer d.addedMu.Unlock()
	a := d.added
	d.added = nil
	return a
}

// activate makes tb the active tab and brings it to the front, where
// Chromium draws it at full rate (unless a dialog blocks it, which would
// block that call too); notes the old one left for the model go with the
// display's. It runs in a call that holds busy.
func (d *Display) activate(tb *tab) {
	if old := d.cur.Swap(tb); old != nil && old != tb {
		d.notes.add(old.state.takeEvents()...)
	}
	if dl, _, _ := tb.state.currentDialog(); dl == nil {
		if err := tb.page.BringToFront(); err != nil {
			d.b.log.Debug("bring a tab to the front", "err", err)
		}
	}
}

// syncTabs brings the display's tabs up to date before an action or a
// capture: it drops tabs that closed (a page's window.close()), opening
// about:blank if none is left, and follows tabs the pages opened, which
// become the active one. Each change leaves a note with the list of tabs.
// It runs in a call that holds busy.
func (d *Display) syncTabs() error {
	d.tabMu.Lock()
	defer d.tabMu.Unlock()
	changed := false
	for _, tb := range slices.Clone(d.tabs) {
		if !tb.state.isClosed() {
			continue
		}
		d.tabs = slices.DeleteFunc(d.tabs, func(x *tab) bool { return x == tb })
		changed = true
		if tb == d.tab() {
			d.notes.add(fmt.Sprintf("The active tab (%s) was closed by its page.", clip(tb.page.URL(), 200)))
			if len(d.tabs) > 0 {
				d.activate(d.tabs[len(d.tabs)-1])
			}
		}
	}
	if len(d.tabs) == 0 && changed {
		if err := d.blankTab(); err != nil {
			return err
		}
	}
	for _, p := range d.takeAdded() {
		if p.IsClosed() || slices.ContainsFunc(d.tabs, func(tb *tab) bool { return tb.page == p }) {
			continue // closed already, or the display's own
		}
		tb := d.newTab(p)
		d.tabs = append(d.tabs, tb)
		d.activate(tb)
		if d.opening.Add(-1) < 0 {
			d.opening.Store(0)
		}
		changed = true
		d.notes.add(fmt.Sprintf("A new tab opened and is now the active tab (tab %d).", len(d.tabs)-1))
	}
	if changed {
		d.noteTabs()
	}
	return nil
}

// maxTabFollows bounds how many times a Capture settles again because a
// tab opened or closed while it settled.
const maxTabFollows = 3

// tabsChanged reports whether a tab opened or closed since the last
// syncTabs.
func (d *Display) tabsChanged() bool {
	added := d.pendingPages()
	d.tabMu.Lock()
	defer d.tabMu.Unlock()
	for _, p := range added {
		if !p.IsClosed() && !slices.ContainsFunc(d.tabs, func(tb *tab) bool { return tb.page == p }) {
			return true
		}
	}
	return slices.ContainsFunc(d.tabs, func(tb *tab) bool { return tb.state.isClosed() })
}

// blankTab opens about:blank in a new tab and makes it the active one. It
// runs under tabMu.
func (d *Display) blankTab() error {
	page, err := d.bctx.NewPage()
	if err != nil {
		return fmt.Errorf("open a blank tab: %w", err)
	}
	tb := d.newTab(page)
	d.tabs = append(d.tabs, tb)
	d.activate(tb)
	d.notes.add("No tab was left open, so a blank tab was opened.")
	return nil
}

// noteTabs leaves a note listing the tabs: "[0] https://... (active)". It
// runs under tabMu. It names each tab by its URL: a page's title would need
// a call into the page, which a dialog in a background tab would block.
func (d *Display) noteTabs() {
	lines := make([]string, 0, len(d.tabs))
	for i, tb := range d.tabs {
		line := fmt.Sprintf("[%d] %s", i, clip(tb.page.URL(), 200))
		if tb == d.tab() {
			line += " (active)"
		}
		lines = append(lines, line)
	}
	d.notes.add("Open tabs (switch_tab and close_tab take the number): " + strings.Join(lines, "; "))
}

// listTabs performs ListTabs.
func (d *Display) listTabs() error {
	d.tabMu.Lock()
	defer d.tabMu.Unlock()
	d.noteTabs()
	return nil
}

// switchTab makes tab i the active one.
func (d *Display) switchTab(i int) error {
	d.tabMu.Lock()
	defer d.tabMu.Unlock()
	if i < 0 || i >= len(d.tabs) {
		return fmt.Errorf("%w: there is no tab %d (there are %d tabs, numbered from 0)", actions.ErrInvalid, i, len(d.tabs))
	}
	if tb := d.tabs[i]; tb != d.tab() {
		d.activate(tb)
	}
	d.noteTabs()
	return nil
}

// closeTab closes tab i. Closing the active tab activates the one before
// it; closing the last tab opens about:blank.
func (d *Display) closeTab(i int) error {
	d.tabMu.Lock()
	defer d.tabMu.Unlock()
	if i < 0 || i >= len(d.tabs) {
		return fmt.Errorf("%w: there is no tab %d (there are %d tabs, numbered from 0)", actions.ErrInvalid, i, len(d.tabs))
	}
	tb := d.tabs[i]
	if err := tb.page.Close(); err != nil {
		return fmt.Errorf("close tab %d: %w", i, err)
	}
	d.tabs = slices.Delete(d.tabs, i, i+1)
	switch {
	case len(d.tabs) == 0:
		if err := d.blankTab(); err != nil {
			return err
		}
	case tb == d.tab():
		d.activate(d.tabs[max(i-1, 0)])
	}
	d.noteTabs()
	return nil
}

// notes are display-level notes for the model, taken with the next
// capture.
type notes struct {
	mu    sync.Mutex
	items []string
}

func (n *notes) add(items ...string) {
	n.mu.Lock()
	n.items = append(n.items, items...)
	n.mu.Unlock()
}

func (n *notes) take() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.items
	n.items = nil
	return s
}
