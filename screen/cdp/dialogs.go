package cdp

import (
	"context"
	"sync"
	"time"
)

// Dialogs in other tabs. Pages of one site share a renderer, so a
// JavaScript dialog that one tab opens (a popup's alert) blocks the others
// too: an action in any tab stops waiting for the browser's answer when a
// dialog opens in any tab of the display, and says which.
//
// A dialog that a new tab opens before the display follows it (at its
// next action or capture) is dismissed by headless Chromium itself: no
// protocol session of the tab has the Page domain enabled yet, so nothing
// is told of it. Playwright avoids that by holding every new page until it
// has attached (Target.setAutoAttach with waitForDebuggerOnStart); chromedp
// cannot send the release to the session that holds such a page, so this
// backend follows new tabs once they run (docs/ISOLATION.md, "What works").

// dialogWatch follows the JavaScript dialogs of all of a display's tabs:
// pages of one site share a renderer, so a dialog in one tab (a popup's
// alert) blocks the others too, and an action in any tab must
// stop waiting for the browser's answer when one opens.
type dialogWatch struct {
	mu     sync.Mutex
	open   int // dialogs open now
	seen   int // dialogs that opened so far
	ctx    context.Context
	cancel context.CancelFunc
}

func newDialogWatch() *dialogWatch {
	w := &dialogWatch{}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	return w
}

// opened records a dialog that opened in a tab.
func (w *dialogWatch) opened() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.open++
	w.seen++
	w.cancel()
}

// closed records a dialog that closed.
func (w *dialogWatch) closed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.open > 0 {
		w.open--
	}
	if w.open == 0 {
		w.cancel()
		w.ctx, w.cancel = context.WithCancel(context.Background())
	}
}

// context returns a context that is canceled while a dialog is open in a
// tab; nil for a unit test's display, which has none.
func (w *dialogWatch) context() context.Context {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ctx
}

// count returns how many dialogs opened so far.
func (w *dialogWatch) count() int {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

// newState returns the page state of a new tab of the display, whose
// dialogs the display watches.
func (d *Display) newState() *pageState {
	st := newPageState(time.Now())
	st.dialogs = d.dialogs
	return st
}

// dialogElsewhere describes a JavaScript dialog open in a tab of the
// display other than the active one, or "".
func (d *Display) dialogElsewhere() string {
	d.tabMu.RLock()
	tabs := append([]*tab(nil), d.tabs...)
	cur := d.cur
	d.tabMu.RUnlock()
	for _, tb := range tabs {
		if tb == cur {
			continue
		}
		if dl := tb.state.openDialog(); dl != "" {
			return dl + " in another tab"
		}
	}
	return ""
}
