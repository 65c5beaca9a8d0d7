// Package cdp is Spotter's Chromium display: a headless Chromium driven over
// the Chrome DevTools Protocol (with chromedp), which captures screenshots of
// a tab and performs mapped actions in it with trusted input events.
//
// A [Browser] is one Chromium process ([Launch]); each [Display] is one tab in
// its own browser context, so displays that share a browser share no cookies,
// storage or history ([Browser.NewDisplay]). [Open] starts a browser with one
// display for the common case of one session per process.
//
// A Display implements the harness's Display interface by its method set:
//
//	Capture(ctx, screen.CaptureOptions) (screen.Shot, error)
//	Perform(ctx, screen.Mapped) error
//
// Capture first waits, bounded by a settle timeout, until the page is quiet.
// After input it waits for the page to begin a new animation frame (a
// requestAnimationFrame fence), so that the input's effects have reached the
// page. Then the page counts as quiet when no navigation is loading, no
// network request is in flight (long-lived ones, such as WebSockets,
// EventSource streams and requests older than the timeout, are ignored), no
// new compositor frame has been drawn for a short quiet window, and
// document.getAnimations() reports no running animation. New frames are seen
// through a screencast of tiny images that Chromium sends only when something
// on the page was redrawn; the first frame after the fence is the input's own
// redraw and does not count. A page that never goes quiet is captured anyway,
// with the reason in Frame.Settle. The browser then scales the capture itself
// to the size the model wants, and Capture reads the encoded image's header
// to make sure the size is what it asked for.
//
// Perform takes coordinates in CSS pixels of the viewport (what
// screen.Frame.Map produces) and sends them as Input.dispatchMouseEvent and
// Input.dispatchKeyEvent events, so pages see the same events a person's mouse
// and keyboard would cause.
//
// A browser that dies, or a tab that crashes or closes, makes Capture and
// Perform fail with an error that wraps screen.ErrGone. A page that stops
// answering (a script in an endless loop) makes them fail with
// [ErrUnresponsive] once Config.CommandTimeout has passed.
//
// A JavaScript dialog (alert, confirm, prompt) blocks its page; this display
// does not handle dialogs yet, so Capture and Perform fail with
// ErrUnresponsive naming the dialog while one is open.
//
// What must be closed: a Browser with Browser.Close, which also ends its
// displays; a Display with Display.Close (a Display from Open also closes its
// browser). A Browser runs chromedp's goroutines and the Chromium process
// until its Close returns; each Display runs one goroutine of its own, which
// has ended when its Close returns. Close methods run to the end even when
// their context is canceled, bounded by their own timeouts of a few seconds.
//
// This is the only package of the module that imports chromedp and cdproto.
package cdp
