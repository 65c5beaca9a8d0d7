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
// A browser runs in one of two modes ([Mode]), chosen by Config.Mode; by
// default FrameControl when Debian's chromium-headless-shell is installed,
// and Screencast otherwise. Both capture the same images and pass the same
// tests; FrameControl is several times faster per step (docs/PERFORMANCE.md,
// "Step latency").
//
// Capture first waits, bounded by a settle timeout, until the page is
// quiet: no navigation is loading and no network request is in flight
// (long-lived ones, such as WebSockets, EventSource streams and requests
// older than the timeout, are ignored), no short timer that the page set
// in answer to input is pending, nothing animates, and the page has
// stopped drawing. A page that never goes quiet (an endless animation) is
// captured anyway, with the reason in Frame.Settle. Capture reads the encoded image's header to make sure its
// size is what it asked for.
//
// Short timers: a page that answers a click after a setTimeout of 120 ms,
// or a few animation frames, shows nothing of it until the timer fires,
// and no protocol event says that it will. A script that every document
// runs first counts the setTimeout (delay up to 500 ms) and
// requestAnimationFrame callbacks scheduled within 100 ms of an input
// event, or of the start of such a callback (a chain, a few deep), and
// reports the count through a Runtime binding; settling waits for it to
// reach zero (at most 1.5 s). Loops that schedule themselves again and
// long timers are not counted there, so polling pages settle as fast as
// others (see timers.go).
//
// Animations: a frame that draws nothing new can fall between two steps
// of a script animation (a jQuery accordion's setInterval of 13 ms, a
// setTimeout chain, a requestAnimationFrame loop) or in the delay or slow
// start of a CSS transition. So the same script tells the loops that
// change the page (the DOM, a canvas, a scroll position) from those that
// poll, and after input, or once the page has drawn something new,
// settling asks the page what still animates: those loops, and the CSS
// animations, CSS transitions and Web Animations that will end
// (document.getAnimations). Endless ones are left to the frames they
// draw. A page that got no input and drew nothing is not asked. A fetch() response counts as loaded
// once its body has arrived (its Content-Length, or 100 ms without new
// data): Chromium reports it finished only when the page reads the body.
// The requests of cross-site (out-of-process) iframes finish in a process
// whose events this tab's session does not see, so they are not waited
// for.
//
// In FrameControl mode (chromium-headless-shell with begin-frame control),
// the page is drawn only when the display runs a frame
// (HeadlessExperimental.beginFrame), and each frame says whether it drew
// anything new. Capture runs frames, back to back after input and then at
// 60 per second, until one draws nothing new while the page loads nothing
// and nothing animates; the image is the screenshot of one more frame,
// unless no frame has drawn anything new since the last screenshot, which
// is then returned again without a new encode (see keptShot). The
// page's last answer about its animations also carries its viewport
// (scroll offset, pinch zoom), read with the getters saved before any of
// its scripts ran, so the capture asks nothing else. CSS animations run on
// the main thread (--disable-threaded-animation): a compositor-thread
// animation that ends while frames are controlled can leave a frame
// unanswered for good. The compositor draws it
// at the size the model wants: the window is that size and the page is
// drawn scaled into it, still laid out at the viewport's CSS size and
// device pixel ratio. A region (zoom) is captured with
// Page.captureScreenshot while frames run. An idle page costs no CPU, as
// nothing is drawn unless asked for.
//
// In Screencast mode (regular headless Chromium), after input Capture
// waits for the page to begin a new animation frame (a requestAnimationFrame
// fence), so that the input's effects have reached the page. New frames are
// seen through a screencast of tiny images that Chromium sends only when
// something on the page was redrawn; the first frame after the fence is
// the input's own redraw and does not count; the page is quiet when no new
// frame has been drawn for a short quiet window and
// document.getAnimations() reports no running animation. The browser then
// scales the capture itself (Page.captureScreenshot with a clip).
//
// Perform takes coordinates in CSS pixels of the viewport (what
// screen.Frame.Map produces) and sends them as Input.dispatchMouseEvent and
// Input.dispatchKeyEvent events, so pages see the same events a person's mouse
// and keyboard would cause. In FrameControl mode a scaled window takes them
// scaled to its pixels, except wheel turns, before which the window goes
// back to the viewport's size (Chromium would scroll by window pixels); and
// mouse moves and wheel turns, which Chromium delivers with a frame, run
// frames until they are answered. There the pointer also leaves the window
// for a wheel turn and comes back after it: a turn that scrolls a scroll
// box under a resting pointer would otherwise leave Chromium waiting for
// a frame that never comes (see Display.wheel).
//
// A browser that dies, or a tab that crashes, makes Capture and
// Perform fail with an error that wraps screen.ErrGone. A page that stops
// answering (a script in an endless loop) makes them fail with
// [ErrUnresponsive] once Config.CommandTimeout has passed.
//
// Real-world pages. A display has tabs: the one it opened, and every tab
// or window its pages open (a link with target=_blank, window.open),
// which it follows: the next Capture shows the new page, and its notes
// (screen.Shot.Events) say that a tab opened and list the tabs. The
// ListTabs, SwitchTab and CloseTab actions manage them, each answered
// with the list; a tab that its page closes gives way to the one before
// it, and when the last tab closes the display opens about:blank, so a
// session always has a page.
//
// A JavaScript dialog (alert, confirm, prompt, beforeunload) never hangs
// the display. An action that opens one succeeds; while it is open,
// Capture returns at once with the page as it was last drawn and a note
// that describes the dialog, Perform refuses every action but Dialog
// (which answers it: accept or dismiss, with the text of a prompt) and the
// tab actions, and Display.Dialog reports it. Config.DismissDialogs makes
// the display dismiss dialogs itself, with a note.
//
// An open native <select> is drawn in the page (headless Chromium draws
// its popup nowhere), so a model sees the options and clicks one; see
// selectmenu.go. File choosers are intercepted: a note says one is open,
// and the Upload action hands it files (relative paths are resolved
// against UploadDir; which paths a model may name is the Policy's
// business; paths that do not exist are errors; a browser in a sandbox
// gets copies through Config.StageFiles), and then the display asks the
// page's file input what it holds: the note names what the page received,
// and an input that holds something else is an error. Downloads go to the
// display's own directory within the limits of Config (see download.go),
// each with a note. Page zoom (Ctrl+plus, Ctrl+minus, Ctrl+0) is emulated
// as Chromium zooms (see zoom.go); coordinates stay in the unzoomed
// viewport's px and Frame.Zoom records the factor. HTML5 drags are
// intercepted and carried with drag events, so dragstart and drop work
// through the Drag action. Input reaches cross-origin (out-of-process)
// iframes as it does a person's: the browser routes it.
//
// What must be closed: a Browser with Browser.Close, which also ends its
// displays; a Display with Display.Close (a Display from Open also closes its
// browser). A Browser runs chromedp's goroutines and the Chromium process
// until its Close returns; each Display runs a goroutine that watches its
// downloads and, in Screencast mode, one per tab that acknowledges
// screencast frames, which have ended when its Close returns; Perform and
// Capture in FrameControl mode run one while they wait for a command that
// needs frames, and it has ended when they return. Close methods run to the end even when
// their context is canceled, bounded by their own timeouts of a few seconds.
//
// This is the only package of the module that imports chromedp and cdproto.
package cdp
