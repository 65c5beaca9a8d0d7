package cdp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// Display is one tab of a Browser, in a browser context of its own. Capture
// and Perform may be called from several goroutines; they run one at a
// time. The caller must call Close.
type Display struct {
	cfg   DisplayConfig
	log   *slog.Logger
	owned *Browser // closed with the display (Open)

	// ctx is chromedp's handle on the tab, not a request context: chromedp
	// binds the tab's lifetime and event loop to it.
	ctx     context.Context
	t       cdp.Session       // the tab: a *chromedp.Target
	browser *chromedp.Browser // nil in unit tests
	state   *pageState
	r       renderer // how the page is drawn, settled and captured (the Mode)
	// browserContext is the tab's browser context when the display made it
	// itself (FrameControl); Close disposes of it.
	browserContext cdp.BrowserContextID

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
	pointer actions.Point
	buttons int64 // CDP bitmask of the mouse buttons held down
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
		cfg:    cfg,
		log:    cfg.Logger,
		state:  newPageState(time.Now()),
		closed: make(chan struct{}),
	}
	frames := b.Mode() == FrameControl
	opts := []chromedp.ContextOption{chromedp.WithListener(d.state.onEvent)}
	if frames {
		// A frame-controlled tab must be created as one, so the display
		// creates its browser context and tab itself.
		id, err := b.newFrameTarget(ctx, d, cfg.Viewport)
		if err != nil {
			return nil, fmt.Errorf("new display: %w", err)
		}
		opts = append(opts, chromedp.WithTargetID(id))
	} else {
		opts = append(opts, chromedp.WithNewBrowserContext())
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
	d.t, d.browser = c.Target, c.Browser
	if frames {
		d.r = &frameControl{d: d}
	} else {
		d.r = &screencast{d: d}
	}
	if err := d.setup(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("new display: %w", err), d.Close(ctx))
	}
	return d, nil
}

// newFrameTarget creates a browser context for d and, in a window of the
// viewport's size, a tab in it whose frames begin only when the display
// asks for them.
func (b *Browser) newFrameTarget(ctx context.Context, d *Display, vp screen.Size) (target.ID, error) {
	br := chromedp.FromContext(b.ctx).Browser
	bc, err := cdp.Call(ctx, br, target.CreateBrowserContext, target.CreateBrowserContextParams{DisposeOnDetach: new(true)})
	if err != nil {
		return "", fmt.Errorf("create browser context: %w", err)
	}
	d.browserContext = bc.BrowserContextID
	res, err := cdp.Call(ctx, br, target.CreateTarget, target.CreateTargetParams{
		URL:                     "about:blank",
		Width:                   int64(vp.W),
		Height:                  int64(vp.H),
		BrowserContextID:        bc.BrowserContextID,
		EnableBeginFrameControl: new(true),
		NewWindow:               new(true),
	})
	if err != nil {
		d.disposeContext(b.ctx)
		return "", fmt.Errorf("create frame-controlled tab: %w", err)
	}
	return res.TargetID, nil
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

// setup makes the page behave like a focused window and lets the renderer
// emulate the viewport and device pixel ratio.
func (d *Display) setup(ctx context.Context) error {
	// Headless windows are not focused; without this, focus and blur
	// events, :focus styles and the caret behave unlike a real browser.
	if _, err := call(ctx, d, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		return err
	}
	return d.r.setup(ctx)
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
		err := chromedp.Cancel(d.ctx)
		if err != nil && alive && !d.browserLost() {
			d.closeErr = fmt.Errorf("close display: %w", err)
		}
		if !d.browserLost() {
			d.disposeContext(d.ctx)
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
// work, or ErrUnresponsive if a JavaScript dialog blocks the page (this
// display does not handle dialogs yet).
func (d *Display) check() error {
	if c := d.goneCause(); c != "" {
		return fmt.Errorf("%s: %w", c, screen.ErrGone)
	}
	if dlg := d.state.openDialog(); dlg != "" {
		return fmt.Errorf("the page is blocked by %s: %w", dlg, ErrUnresponsive)
	}
	return nil
}

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
		if dlg := d.state.openDialog(); dlg != "" {
			return fmt.Errorf("%s: the page is blocked by %s: %w", method, dlg, ErrUnresponsive)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: no answer within %v: %w", method, timeout, ErrUnresponsive)
	}
	return fmt.Errorf("%s: %v", method, err)
}
