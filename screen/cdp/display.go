package cdp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/internal/axtext"
)

// Display is one tab of a Browser, in a browser context of its own. Capture
// and Perform may be called from several goroutines; they run one at a
// time. The caller must call Close.
type Display struct {
	cfg   DisplayConfig
	log   *slog.Logger
	owned *Browser // closed with the display (Open)

	// ctx, t, state and r are those of the active tab (see tab); they
	// change only under mu and tabMu.
	//
	// ctx is chromedp's handle on the tab, not a request context: chromedp
	// binds the tab's lifetime and event loop to it.
	ctx     context.Context
	t       cdp.Session       // the tab: a *chromedp.Target
	browser *chromedp.Browser // nil in unit tests
	frameMu *sync.Mutex       // the browser's frame lock (Browser.frameMu); nil in unit tests
	state   *pageState
	r       renderer // how the page is drawn, settled and captured (the Mode)
	// browserContext is the tab's browser context when the display made it
	// itself (FrameControl); Close disposes of it.
	browserContext cdp.BrowserContextID

	bctx   context.Context      // chromedp's handle on the browser; nil in unit tests
	bcID   cdp.BrowserContextID // the display's browser context, whoever made it
	frames bool                 // FrameControl mode

	tabMu sync.RWMutex // guards the swap of the active tab's fields above, for readers without mu
	tabs  []*tab       // open tabs, in the order ListTabs numbers them
	cur   *tab         // the active tab
	first *tab         // the tab NewDisplay opened; its ctx is canceled last
	all   []*tab       // every tab ever attached, closed or not: Close cancels their contexts
	notes notes        // display-level notes for the model: tabs, downloads

	dl downloads // the display's downloads
	// plog gathers every tab's console messages and requests for the
	// next capture (pagelog.go); live is the live view (live.go).
	plog pageLog
	live live

	refs axtext.Refs // the element references of Snapshot, for Locate

	// dialogs follows the JavaScript dialogs of every tab (dialogs.go).
	dialogs *dialogWatch

	// bg scopes the display's own goroutine (screencast acks); Close
	// cancels it and waits for wg.
	bg       context.Context
	bgCancel context.CancelFunc
	wg       sync.WaitGroup

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error

	mu      sync.Mutex // serializes Capture and Perform
	seq     int        // frames captured
	lastURL string     // URL of the previous capture
	fenced  int64      // inputs whose effects a settle has waited for
	// idle is, in Screencast mode, when the page last answered that
	// nothing animates: its tab's state, and its frame and input counts
	// then.
	idle struct {
		st             *pageState
		frames, inputs int64
	}
	pointer actions.Point
	buttons int64 // CDP bitmask of the mouse buttons held down
	// last is the previous full capture, shown again while a JavaScript
	// dialog blocks the page (the browser draws nothing new then).
	last struct {
		req   captureReq
		data  []byte
		frame screen.Frame
	}
}

// NewDisplay opens a new tab in a new browser context, so that it shares no
// cookies, storage or history with other displays, and emulates cfg's
// viewport and device pixel ratio. ctx bounds the opening only. In
// Screencast mode the display runs one goroutine of its own (it
// acknowledges screencast frames) until Close.
func (b *Browser) NewDisplay(ctx context.Context, cfg DisplayConfig) (*Display, error) {
	cfg = cfg.withDefaults(b.cfg)
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new display: %w", err)
	}
	if b.lost() {
		return nil, fmt.Errorf("new display: browser exited: %w", screen.ErrGone)
	}
	d := &Display{
		cfg:     cfg,
		log:     cfg.Logger,
		closed:  make(chan struct{}),
		dialogs: newDialogWatch(),
	}
	d.state = d.newState()
	frames := b.Mode() == FrameControl
	opts := []chromedp.ContextOption{chromedp.WithListener(d.state.onEvent), chromedp.WithListener(d.onTabEvent)}
	if frames {
		// A frame-controlled tab must be created as one, so the display
		// creates its browser context and tab itself.
		id, err := b.newFrameTarget(ctx, d, cfg)
		if err != nil {
			return nil, fmt.Errorf("new display: %w", err)
		}
		opts = append(opts, chromedp.WithTargetID(id))
	} else {
		opts = append(opts, chromedp.WithNewBrowserContext(func(p *target.CreateBrowserContextParams) { withProxy(p, cfg.Proxy) }))
	}
	tctx, tcancel := chromedp.NewContext(b.ctx, opts...)
	d.ctx = tctx
	d.bg, d.bgCancel = context.WithCancel(context.Background())

	// The first call on tctx opens the tab and binds it to tctx; wait for
	// it without giving it ctx's deadline.
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
		d.bgCancel()
		d.disposeContext(b.ctx)
		if b.lost() {
			err = errors.Join(err, screen.ErrGone)
		}
		return nil, fmt.Errorf("new display: open tab: %w", err)
	}
	c := chromedp.FromContext(tctx)
	d.browser, d.bctx, d.frames, d.frameMu = c.Browser, b.ctx, frames, &b.frameMu
	d.bcID = cmp.Or(d.browserContext, c.BrowserContextID)
	first := &tab{id: c.Target.TargetID, ctx: tctx, cancel: tcancel, t: c.Target, state: d.state}
	d.first, d.all = first, []*tab{first}
	if err := d.openTab(ctx, first); err != nil {
		return nil, errors.Join(fmt.Errorf("new display: %w", err), d.Close(ctx))
	}
	if err := d.setupDownloads(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("new display: %w", err), d.Close(ctx))
	}
	return d, nil
}

// newFrameTarget creates a browser context for d and, in a window of the
// viewport's size, a tab in it whose frames begin only when the display
// asks for them.
func (b *Browser) newFrameTarget(ctx context.Context, d *Display, cfg DisplayConfig) (target.ID, error) {
	br := chromedp.FromContext(b.ctx).Browser
	p := target.CreateBrowserContextParams{DisposeOnDetach: new(true)}
	withProxy(&p, cfg.Proxy)
	bc, err := cdp.Call(ctx, br, target.CreateBrowserContext, p)
	if err != nil {
		return "", fmt.Errorf("create browser context: %w", err)
	}
	d.browserContext = bc.BrowserContextID
	res, err := cdp.Call(ctx, br, target.CreateTarget, tabParams("about:blank", bc.BrowserContextID, cfg.Viewport, true))
	if err != nil {
		d.disposeContext(b.ctx)
		return "", fmt.Errorf("create frame-controlled tab: %w", err)
	}
	return res.TargetID, nil
}

// withProxy makes the browser context of p send every request through
// proxy, loopback included (Chromium bypasses a proxy for loopback unless
// told not to), if proxy is set.
func withProxy(p *target.CreateBrowserContextParams, proxy string) {
	if proxy != "" {
		p.ProxyServer, p.ProxyBypassList = proxy, "<-loopback>"
	}
}

// tabParams are the parameters of a new tab at url in browser context bc;
// with frames (FrameControl mode), in a window of its own of the
// viewport's size whose frames begin only when the display asks for them.
func tabParams(url string, bc cdp.BrowserContextID, vp screen.Size, frames bool) target.CreateTargetParams {
	p := target.CreateTargetParams{URL: url, BrowserContextID: bc}
	if frames {
		p.Width, p.Height = int64(vp.W), int64(vp.H)
		p.EnableBeginFrameControl, p.NewWindow = new(true), new(true)
	}
	return p
}

// disposeContext disposes of the browser context the display made, if
// any. ctx is a chromedp context of the browser; the call is bounded by
// its own timeout.
func (d *Display) disposeContext(ctx context.Context) {
	if d.browserContext == "" {
		return
	}
	c := chromedp.FromContext(ctx)
	if c == nil || c.Browser == nil {
		return
	}
	tctx, cancel := context.WithTimeout(context.Background(), browserCloseTimeout)
	defer cancel()
	// An error leaves nothing to do: the context goes with the browser.
	_, _ = cdp.Call(tctx, c.Browser, target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: d.browserContext})
	d.browserContext = ""
}

// setup makes the active tab's page behave like a focused window, lets the
// renderer emulate the viewport and device pixel ratio, and readies what
// the display handles itself: file choosers, drags and select menus.
func (d *Display) setup(ctx context.Context) error {
	// Headless windows are not focused; without this, focus and blur
	// events, :focus styles and the caret behave unlike a real browser.
	if _, err := call(ctx, d, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		return err
	}
	if err := d.r.setup(ctx); err != nil {
		return err
	}
	if err := d.watchTimers(ctx); err != nil {
		return err
	}
	if _, err := call(ctx, d, page.SetInterceptFileChooserDialog, page.SetInterceptFileChooserDialogParams{Enabled: true}); err != nil {
		return err
	}
	if _, err := call(ctx, d, input.SetInterceptDrags, input.SetInterceptDragsParams{Enabled: true}); err != nil {
		return err
	}
	return d.installSelectMenus(ctx)
}

// Close closes the tab and disposes of its browser context; a display from
// Open also closes its browser. When Close returns, the display's goroutines
// have ended. It runs to the end even if its context is canceled, bounded by
// chromedp's own timeouts (a few seconds for a page that does not answer).
// Close is idempotent; Capture and Perform fail with screen.ErrGone after it.
func (d *Display) Close(ctx context.Context) error {
	d.closeOnce.Do(func() {
		alive := d.goneCause() == ""
		close(d.closed)
		d.bgCancel()
		d.wg.Wait()
		var err error
		for _, tb := range slices.Backward(d.all) {
			if tb != d.first && tb.cancel != nil {
				tb.cancel() // closes a tab the display attached to; errors leave nothing to do
			}
		}
		switch {
		case d.first == nil:
			if d.ctx != nil {
				err = chromedp.Cancel(d.ctx)
			}
		case d.firstClosed():
			// chromedp would wait for a tab that is gone already.
			d.first.cancel()
			if d.browserContext == "" && d.bcID != "" {
				d.browserContext = d.bcID // chromedp made it; dispose of it below
			}
		default:
			err = chromedp.Cancel(d.first.ctx)
		}
		if err != nil && alive && !d.browserLost() && !d.firstClosed() {
			d.closeErr = fmt.Errorf("close display: %w", err)
		}
		if !d.browserLost() && d.bctx != nil {
			d.disposeContext(d.bctx)
		}

		if d.owned != nil {
			d.closeErr = errors.Join(d.closeErr, d.owned.Close(ctx))
		}
	})
	return d.closeErr
}

func (d *Display) browserLost() bool {
	if d.browser == nil {
		return false
	}
	select {
	case <-d.browser.LostConnection:
		return true
	default:
		return false
	}
}

// goneCause says why the display can no longer work, or "" if it can.
func (d *Display) goneCause() string {
	if d.browserLost() {
		return "the browser exited"
	}
	if ch, err := chromedp.Detached(d.ctx); err == nil {
		select {
		case <-ch:
			return "the tab was closed"
		default:
		}
	}
	if d.state.isCrashed() {
		return "the page crashed"
	}
	select {
	case <-d.closed:
		return "display closed"
	default:
	}
	return ""
}

// check returns an error wrapping screen.ErrGone if the display cannot
// work. A JavaScript dialog that blocks the page is not an error here:
// Capture shows it and Perform answers it (see dialog.go).
func (d *Display) check() error {
	if c := d.goneCause(); c != "" {
		return fmt.Errorf("%s: %w", c, screen.ErrGone)
	}
	return nil
}

// errBlocked marks a command whose wait ended because a JavaScript dialog
// opened (or was open): the page answers nothing until it closes.
var errBlocked = fmt.Errorf("%w while a JavaScript dialog is open", ErrUnresponsive)

// call runs one protocol command on the tab, bounded by CommandTimeout, and
// translates its errors: a dead browser or tab wraps screen.ErrGone, a page
// that does not answer wraps ErrUnresponsive, and ctx's end wraps ctx's
// error.
func call[P, R any](ctx context.Context, d *Display, c cdp.Command[P, R], p P) (R, error) {
	return callWithin(ctx, d, d.cfg.CommandTimeout, c, p)
}

// callWithin is call with its own bound.
// A JavaScript dialog that opens while the command runs ends the wait at
// once: the page answers nothing until the dialog closes.
func callWithin[P, R any](ctx context.Context, d *Display, timeout time.Duration, c cdp.Command[P, R], p P) (R, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop := context.AfterFunc(d.state.dialogOpened(), cancel)
	defer stop()
	if any := d.dialogs.context(); any != nil {
		stopAny := context.AfterFunc(any, cancel)
		defer stopAny()
	}
	r, err := cdp.Call(cctx, d.t, c, p)
	if err != nil {
		return r, d.translate(ctx, c.Method, timeout, err)
	}
	return r, nil
}

func (d *Display) translate(ctx context.Context, method string, timeout time.Duration, err error) error {
	if cause := d.goneCause(); cause != "" {
		return fmt.Errorf("%s: %s: %w", method, cause, screen.ErrGone)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", method, context.Cause(ctx))
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		if dlg := cmp.Or(d.state.openDialog(), d.dialogElsewhere()); dlg != "" {
			return fmt.Errorf("%s: the page is blocked by %s: %w", method, dlg, errBlocked)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: no answer within %v: %w", method, timeout, ErrUnresponsive)
	}
	return fmt.Errorf("%s: %v", method, err)
}
