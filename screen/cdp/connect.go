package cdp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// Connect attaches to a browser that runs elsewhere, such as inside a
// sandbox, over a connection that dial opens. The connection carries the
// browser's pipe protocol (the one of --remote-debugging-pipe: JSON messages
// each ended by a zero byte), so no TCP port is needed; closing it must stop
// that browser. dial is called once.
//
// The returned Browser works like one from Launch: its NewDisplay opens
// tabs in browser contexts of their own, and a browser that goes away makes
// its displays fail with errors wrapping screen.ErrGone. cfg.Exec and
// cfg.Flags are not used: whoever serves the connection starts the browser.
// cfg.Mode says what it started: FrameControl for chromium-headless-shell
// with --enable-begin-frame-control and --run-all-compositor-stages-before-draw;
// anything else means a regular headless Chromium (Screencast).
// ctx bounds the dial and the start only. The caller must call Close, which
// closes the connection; when Connect fails, it has closed it.
func Connect(ctx context.Context, dial func(context.Context) (net.Conn, error), cfg Config) (*Browser, error) {
	if dial == nil {
		return nil, errors.New("connect to chromium: no dial function")
	}
	cfg = cfg.withDefaults()
	if err := (DisplayConfig{}).withDefaults(cfg).validate(); err != nil {
		return nil, fmt.Errorf("connect to chromium: %w", err)
	}
	mode := Screencast
	if cfg.Mode == FrameControl {
		mode = FrameControl
	}
	log := cfg.Logger.With(logKeyComponent, "chromium", logKeyMode, mode.String())
	alloc := &connAllocator{dial: dial}
	actx, acancel := chromedp.NewAllocatorContext(context.WithoutCancel(ctx), alloc)
	bctx, cancelOnce := chromedp.NewContext(actx,
		chromedp.WithLogf(func(format string, args ...any) {
			log.Debug(fmt.Sprintf(format, args...))
		}),
		chromedp.WithErrorf(func(format string, args ...any) {
			log.Warn(fmt.Sprintf(format, args...))
		}),
	)
	// chromedp's cancel function waits for the browser's allocation to
	// end; called a second time after an allocation that never began (a
	// context already done), it waits for good. It is called once.
	bcancel := sync.OnceFunc(cancelOnce)
	b := &Browser{cfg: cfg, log: log, path: "connection", mode: mode, ctx: bctx, cancel: bcancel, allocCancel: acancel}

	// The first call on bctx dials and binds the connection to bctx; it
	// must not carry ctx's deadline, so wait for it here instead.
	started := make(chan error, 1)
	var initial []*target.Info
	go func() {
		var err error
		initial, err = chromedp.Targets(bctx)
		started <- err
	}()
	var err error
	select {
	case err = <-started:
	case <-ctx.Done():
		bcancel()
		<-started
		err = context.Cause(ctx)
	}
	if err != nil {
		lost := b.lost()
		bcancel()
		acancel()
		alloc.close()
		if lost {
			return nil, fmt.Errorf("connect to chromium: the connection closed before the browser answered: %w", err)
		}
		return nil, fmt.Errorf("connect to chromium: %w", err)
	}
	b.closeStartTabs(ctx, initial)
	return b, nil
}

// connAllocator gives chromedp a browser over a connection that dial
// opens. It counts as an Attacher: chromedp then neither waits for a
// process of its own nor asks the browser to close; closing the connection
// stops the browser instead.
type connAllocator struct {
	dial func(context.Context) (net.Conn, error)

	mu   sync.Mutex
	conn *onceCloser // the dialed connection, once there is one
}

// close closes the dialed connection, if any.
func (a *connAllocator) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn != nil {
		a.conn.Close()
	}
}

// Allocate dials and starts chromedp's handler on the connection. The
// handler closes the connection when ctx (the browser's context) ends.
func (a *connAllocator) Allocate(ctx context.Context, opts ...chromedp.BrowserOption) (*chromedp.Browser, error) {
	conn, err := a.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	c := &onceCloser{Conn: conn}
	a.mu.Lock()
	a.conn = c
	a.mu.Unlock()
	return chromedp.NewBrowserTransport(ctx, chromedp.NewPipeConn(c, c), opts...)
}

// Wait has nothing to wait for: chromedp's handler owns the connection.
func (a *connAllocator) Wait() {}

// Attaches tells chromedp that closing the connection, not a command, ends
// the browser.
func (a *connAllocator) Attaches() bool { return true }

// onceCloser lets the pipe transport close its reader and its writer, both
// the same connection, without a second Close failing.
type onceCloser struct {
	net.Conn
	once sync.Once
	err  error
}

func (c *onceCloser) Close() error {
	c.once.Do(func() { c.err = c.Conn.Close() })
	return c.err
}
