package playwright

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pw "github.com/playwright-community/playwright-go"

	"github.com/spotter-harness/spotter/internal/chromeflags"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/internal/axtext"
)

// DriverVersion is the version of playwright-core that the playwright-go
// module of this build drives.
const DriverVersion = "1.52.0"

// ErrNoDriver is returned by Launch and Open when the driver directory
// holds no Playwright driver.
var ErrNoDriver = errors.New("no Playwright driver: run screen/playwright/install-driver.sh")

// ErrVersion marks a Playwright server of another version than
// DriverVersion's: Playwright's servers take clients of their own minor
// version only. Connect errors that wrap it are *VersionError.
var ErrVersion = errors.New("the Playwright server's version is not the client's")

// VersionError says which versions a Playwright server and this client
// are, as the server's refusal names them ("1.50", "1.52").
type VersionError struct {
	Server, Client string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("the Playwright server runs Playwright %s and Spotter's client is Playwright %s: a server takes "+
		"clients of its own minor version only (run the server with playwright-core %s, or point at one that runs it)",
		e.Server, e.Client, DriverVersion)
}

// Is makes a VersionError match ErrVersion.
func (e *VersionError) Is(target error) bool { return target == ErrVersion }

// mismatch finds the versions in a Playwright server's refusal of a
// client of another version (HTTP 428, "Playwright version mismatch: -
// server version: v1.50 - client version: v1.52").
var mismatch = regexp.MustCompile(`(?s)version mismatch.*?server version: v?([0-9][0-9.]*).*?client version: v?([0-9][0-9.]*)`)

func versionError(err error) *VersionError {
	m := mismatch.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	return &VersionError{Server: m[1], Client: m[2]}
}

// ErrUnresponsive marks a page that did not answer a Playwright call within
// the display's CommandTimeout, such as a page whose script runs an endless
// loop.
var ErrUnresponsive = errors.New("page is not responding")

// Defaults of Config.
const (
	DefaultExec           = "/usr/bin/chromium"
	DefaultSettleTimeout  = 3 * time.Second
	DefaultQuietWindow    = 50 * time.Millisecond
	DefaultCommandTimeout = 10 * time.Second
)

// newDisplayTimeout bounds NewDisplay, besides its context.
const newDisplayTimeout = 30 * time.Second

// DefaultViewport is the viewport of a display whose config names none.
var DefaultViewport = screen.Size{W: 1280, H: 800}

// Config configures a browser and, as defaults, its displays.
type Config struct {
	// Viewport is the CSS size of a display's viewport; zero means
	// 1280x800.
	Viewport screen.Size
	// DPR is the device pixel ratio displays emulate; 0 means 1.
	DPR float64
	// Exec is the Chromium binary; empty means /usr/bin/chromium. It is
	// not used when WSEndpoint is set: the server's browser runs.
	Exec string
	// WSEndpoint, when set, is the WebSocket URL of a remote Playwright
	// browser server (a Playwright grid, or chromium.launchServer's
	// wsEndpoint, such as "ws://grid:3000/abc"). Launch then connects to
	// that server's Chromium instead of launching one, and Close
	// disconnects from it, leaving the server running. The local driver
	// still runs; the browser, and so what the page can reach over the
	// network, is the server's.
	WSEndpoint string
	// WSHeaders are extra HTTP headers of the WebSocket handshake with
	// WSEndpoint, such as a grid's authorization.
	WSHeaders map[string]string
	// DriverDir is the driver directory that install-driver.sh fills
	// (package/cli.js and node). Empty means the user cache directory's
	// spotter/playwright-1.52.0, such as ~/.cache/spotter/playwright-1.52.0.
	DriverDir string
	// Flags are extra Chromium command-line flags, such as "--lang=de".
	// They must be empty when WSEndpoint is set: the server launched its
	// browser.
	Flags []string
	// SettleTimeout bounds the wait for a page to go quiet before a
	// capture; 0 means DefaultSettleTimeout.
	SettleTimeout time.Duration
	// QuietWindow is how long a page must not change to count as quiet;
	// 0 means DefaultQuietWindow.
	QuietWindow time.Duration
	// CommandTimeout bounds one Playwright call (an input event, a
	// screenshot); a page that does not answer in time gives an error
	// wrapping ErrUnresponsive. 0 means DefaultCommandTimeout.
	CommandTimeout time.Duration
	// DismissDialogs makes displays dismiss each JavaScript dialog as it
	// opens, with a note for the model. By default a dialog stays open and
	// blocks the page until the Dialog action answers it; Dialog reports
	// it meanwhile.
	DismissDialogs bool
	// UploadDir is the directory that relative paths of the Upload action
	// are taken from; empty means the process's working directory.
	UploadDir string
	// Logger receives the driver's diagnostics; nil means slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Viewport.Empty() {
		c.Viewport = DefaultViewport
	}
	c.DPR = cmp.Or(c.DPR, 1)
	if c.WSEndpoint != "" {
		if err := c.checkRemote(); err != nil {
			return c, err
		}
		c.Exec = ""
	} else {
		c.Exec = cmp.Or(c.Exec, DefaultExec)
		if len(c.WSHeaders) > 0 {
			return c, errors.New("WebSocket headers without a WebSocket endpoint")
		}
	}
	if c.DriverDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return c, fmt.Errorf("driver directory: %w", err)
		}
		c.DriverDir = filepath.Join(dir, "spotter", "playwright-"+DriverVersion)
	}
	c.SettleTimeout = cmp.Or(c.SettleTimeout, DefaultSettleTimeout)
	c.QuietWindow = cmp.Or(c.QuietWindow, DefaultQuietWindow)
	c.CommandTimeout = cmp.Or(c.CommandTimeout, DefaultCommandTimeout)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c, c.display().validate()
}

// checkRemote checks a config that connects to c.WSEndpoint.
func (c Config) checkRemote() error {
	u, err := url.Parse(c.WSEndpoint)
	switch {
	case err != nil:
		return fmt.Errorf("playwright server endpoint: %v", err)
	case u.Scheme != "ws" && u.Scheme != "wss":
		return fmt.Errorf("playwright server endpoint %q: want a ws:// or wss:// URL", u.Redacted())
	case u.Host == "":
		return fmt.Errorf("playwright server endpoint %q: no host", u.Redacted())
	case len(c.Flags) > 0:
		return fmt.Errorf("chromium flags %q: a connected browser was launched by its server; set no flags with a WebSocket endpoint", c.Flags)
	}
	return nil
}

// display returns the display defaults of c.
func (c Config) display() DisplayConfig {
	return DisplayConfig{Viewport: c.Viewport, DPR: c.DPR, SettleTimeout: c.SettleTimeout,
		QuietWindow: c.QuietWindow, CommandTimeout: c.CommandTimeout}
}

// DisplayConfig configures one display. Each zero field takes the value of
// the browser's Config.
type DisplayConfig struct {
	Viewport       screen.Size
	DPR            float64
	SettleTimeout  time.Duration
	QuietWindow    time.Duration
	CommandTimeout time.Duration
}

func (c DisplayConfig) withDefaults(b DisplayConfig) DisplayConfig {
	if c.Viewport.Empty() {
		c.Viewport = b.Viewport
	}
	c.DPR = cmp.Or(c.DPR, b.DPR)
	c.SettleTimeout = cmp.Or(c.SettleTimeout, b.SettleTimeout)
	c.QuietWindow = cmp.Or(c.QuietWindow, b.QuietWindow)
	c.CommandTimeout = cmp.Or(c.CommandTimeout, b.CommandTimeout)
	return c
}

func (c DisplayConfig) validate() error {
	switch {
	case c.Viewport.W <= 0 || c.Viewport.H <= 0 || c.Viewport.W > 10000 || c.Viewport.H > 10000:
		return fmt.Errorf("viewport %dx%d: want 1..10000 CSS px each way", c.Viewport.W, c.Viewport.H)
	case !(c.DPR > 0 && c.DPR <= 8):
		return fmt.Errorf("device pixel ratio %g: want more than 0 and at most 8", c.DPR)
	case c.SettleTimeout < 0 || c.QuietWindow < 0 || c.CommandTimeout < 0:
		return errors.New("negative timeout")
	}
	return nil
}

// chromiumFlags are the flags every browser gets, besides Playwright's own
// and chromeflags' (no traffic of its own).
var chromiumFlags = []string{
	"--disable-gpu",
	"--disable-dev-shm-usage",
}

// launchArgs returns the command line a launched browser gets besides
// Playwright's defaults, and the default to drop: Chromium reads only one
// --disable-features, so Playwright's list (read from the driver's
// chromiumSwitches.js), chromeflags' and cfg.Flags' become one. If the
// driver's list cannot be read, Playwright's stands and chromeflags'
// features are left out, which the log says.
func launchArgs(cfg Config, log *slog.Logger) (args, ignore []string) {
	rest, disabled := chromeflags.SplitFeatures(cfg.Flags)
	args = append(append(chromeflags.Switches(), chromiumFlags...), rest...)
	defaults, err := defaultFeatures(cfg.DriverDir)
	if err != nil {
		log.Warn("Chromium's own traffic stays partly on: the driver's list of disabled features", "err", err)
		return args, nil
	}
	ignore = []string{"--disable-features=" + strings.Join(defaults, ",")}
	return append(args, chromeflags.DisableFeatures(append(defaults, disabled...)...)), ignore
}

// featureList finds the list of features that Playwright disables in its
// chromiumSwitches.js, and quoted names in it.
var (
	featureList  = regexp.MustCompile(`(?s)const disabledFeatures = \[(.*?)\];`)
	quotedName   = regexp.MustCompile(`"([A-Za-z0-9_-]+)"`)
	lineComments = regexp.MustCompile(`//[^\n]*`)
)

// defaultFeatures returns the features Playwright's driver in dir
// disables by default, in its order.
func defaultFeatures(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package", "lib", "server", "chromium", "chromiumSwitches.js"))
	if err != nil {
		return nil, err
	}
	m := featureList.FindSubmatch(b)
	if m == nil {
		return nil, errors.New("chromiumSwitches.js has no disabledFeatures list")
	}
	var out []string
	for _, q := range quotedName.FindAllSubmatch(lineComments.ReplaceAll(m[1], nil), -1) {
		out = append(out, string(q[1]))
	}
	if len(out) == 0 {
		return nil, errors.New("chromiumSwitches.js's disabledFeatures list is empty")
	}
	return out, nil
}

// Browser is a Playwright driver and the headless Chromium it launched or
// connected to.
// Its displays are pages, each in a browser context of its own. A Browser is
// safe for concurrent use; the caller must call Close.
type Browser struct {
	cfg     Config
	log     *slog.Logger
	pw      *pw.Playwright
	browser pw.Browser
	remote  bool        // connected to cfg.WSEndpoint
	lost    atomic.Bool // the browser exited or the connection broke

	closeOnce sync.Once
	closeErr  error
}

// Launch starts a Playwright driver from cfg.DriverDir and launches
// Chromium with a fresh temporary profile, or, if cfg.WSEndpoint is set,
// connects to the Chromium of that Playwright server. ctx bounds the launch
// or connection; starting the driver (about a second) cannot be
// interrupted. The caller must call Close, which stops the browser (or
// disconnects from it) and the driver.
func Launch(ctx context.Context, cfg Config) (*Browser, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("launch playwright: %w", err)
	}
	if err := checkDriver(cfg.DriverDir); err != nil {
		return nil, err
	}
	exe := ""
	if cfg.WSEndpoint == "" {
		if exe, err = exec.LookPath(cfg.Exec); err != nil {
			return nil, fmt.Errorf("chromium %q: %w", cfg.Exec, err)
		}
	}
	log := cfg.Logger.With("component", "playwright")
	// playwright-go keeps the Logger in a variable of its package (without
	// it, it would redirect the standard library's log package to Stderr):
	// the latest Launch's logger wins.
	p, err := pw.Run(&pw.RunOptions{
		DriverDirectory:     cfg.DriverDir,
		SkipInstallBrowsers: true,
		Stdout:              logWriter{log},
		Stderr:              logWriter{log},
		Logger:              log,
	})
	if err != nil {
		return nil, fmt.Errorf("start playwright driver in %s: %v", cfg.DriverDir, err)
	}
	b := &Browser{cfg: cfg, log: log, pw: p, remote: cfg.WSEndpoint != ""}
	timeout := 30 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if b.remote {
		if err := b.connect(ctx, timeout); err != nil {
			return nil, errors.Join(err, b.Close(ctx))
		}
		return b, nil
	}
	if timeout <= 0 || ctx.Err() != nil {
		return nil, errors.Join(fmt.Errorf("launch %s: %w", exe, context.Cause(ctx)), b.Close(ctx))
	}
	args, ignore := launchArgs(cfg, log)
	b.browser, err = p.Chromium.Launch(pw.BrowserTypeLaunchOptions{
		ExecutablePath:    new(exe),
		Headless:          new(true),
		ChromiumSandbox:   new(false),
		Args:              args,
		IgnoreDefaultArgs: ignore,
		Timeout:           new(float64(timeout.Milliseconds())),
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("launch %s: %s", exe, playwrightText(err)), b.Close(ctx))
	}
	b.browser.OnDisconnected(func(pw.Browser) { b.lost.Store(true) })
	return b, nil
}

// connect connects b to the Playwright server at b.cfg.WSEndpoint within
// timeout.
func (b *Browser) connect(ctx context.Context, timeout time.Duration) error {
	u, _ := url.Parse(b.cfg.WSEndpoint) // checked by withDefaults
	where := u.Redacted()
	if timeout <= 0 || ctx.Err() != nil {
		return fmt.Errorf("connect to playwright server %s: %w", where, context.Cause(ctx))
	}
	var headers map[string]string
	if len(b.cfg.WSHeaders) > 0 {
		headers = maps.Clone(b.cfg.WSHeaders) // playwright-go clears the map it is given
	}
	browser, err := b.pw.Chromium.Connect(b.cfg.WSEndpoint, pw.BrowserTypeConnectOptions{
		Headers: headers,
		Timeout: new(float64(timeout.Milliseconds())),
	})
	if err != nil {
		if ve := versionError(err); ve != nil {
			return fmt.Errorf("connect to playwright server %s: %w", where, ve)
		}
		return fmt.Errorf("connect to playwright server %s: %s", where, playwrightText(err))
	}
	b.browser = browser
	b.browser.OnDisconnected(func(pw.Browser) { b.lost.Store(true) })
	b.log.Debug("connected", "endpoint", where, "version", browser.Version())
	return nil
}

// lostCause says how b was lost.
func (b *Browser) lostCause() string {
	if b.remote {
		return "the connection to the playwright server closed"
	}
	return "the browser exited"
}

// checkDriver reports whether dir looks like a driver directory.
func checkDriver(dir string) error {
	for _, f := range []string{"package/cli.js", "node"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return fmt.Errorf("%w (%s is missing)", ErrNoDriver, filepath.Join(dir, f))
		}
	}
	return nil
}

// Close closes the browser, and with it every display, and stops the
// driver. A connected browser is not closed: Close disconnects from its
// server, which closes the browser contexts this Browser opened there and
// keeps running. Displays of a closed browser fail with errors wrapping
// screen.ErrGone; they should still be closed. Close is idempotent.
func (b *Browser) Close(context.Context) error {
	b.closeOnce.Do(func() {
		var errs []error
		if b.browser != nil {
			// For a connected browser, playwright-go's Close only closes
			// the connection.
			what := "close browser"
			if b.remote {
				what = "disconnect from playwright server"
			}
			if err := b.browser.Close(); err != nil && !b.lost.Load() {
				errs = append(errs, fmt.Errorf("%s: %s", what, playwrightText(err)))
			}
		}
		if err := b.pw.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop playwright driver: %v", err))
		}
		b.closeErr = errors.Join(errs...)
	})
	return b.closeErr
}

// Open launches a browser, or connects to one (Config.WSEndpoint), with one
// display. Closing the display closes the browser, or disconnects from it.
func Open(ctx context.Context, cfg Config) (*Display, error) {
	b, err := Launch(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d, err := b.NewDisplay(ctx, DisplayConfig{})
	if err != nil {
		return nil, errors.Join(err, b.Close(ctx))
	}
	d.owned = true
	return d, nil
}

// Display is the pages of a Browser in a browser context of its own: the
// one NewDisplay opened and the tabs its pages opened, of which it shows
// the active one. Capture and Perform may be called from several
// goroutines; they run one at a time. The caller must call Close.
type Display struct {
	cfg   DisplayConfig
	b     *Browser
	owned bool // the display closes b (Open)

	// ctxMu guards bctx while NewDisplay sets it; it never changes after
	// NewDisplay returns.
	ctxMu      sync.Mutex
	bctx       pw.BrowserContext
	bctxClosed bool

	// cur is the active tab. It changes only in a call that holds busy,
	// so a Playwright call sees one tab from its start to its end.
	cur     atomic.Pointer[tab]
	tabMu   sync.Mutex
	tabs    []*tab // in the order they opened; guarded by tabMu
	addedMu sync.Mutex
	added   []pw.Page     // pages the context announced and syncTabs has not seen; guarded by addedMu
	addedCh chan struct{} // receives a value (without blocking the sender) when a page is added
	opening atomic.Int64  // windows the pages said they open, less the pages added since
	notes   notes         // display-level notes for the model
	plog    pageLog       // every tab's console messages and requests, for the next capture (pagelog.go)
	refs    axtext.Refs   // the element references of Snapshot, for Locate

	// busy holds a token while a goroutine runs Playwright calls, so that
	// a call left behind by a canceled context ends before the next starts.
	busy chan struct{}
	wg   sync.WaitGroup // goroutines running Playwright calls

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error

	mu      sync.Mutex // serializes Capture, Perform and Close
	seq     int        // frames captured
	lastURL string     // URL of the previous capture
	pointer pointer    // where the mouse is, CSS px
	// last is the previous capture, shown again while a dialog blocks the
	// page.
	last struct {
		req   captureReq
		data  []byte
		frame screen.Frame
	}
}

// NewDisplay opens a page in a new browser context, so that it shares no
// cookies, storage or history with other displays, with cfg's viewport and
// device pixel ratio.
func (b *Browser) NewDisplay(ctx context.Context, cfg DisplayConfig) (*Display, error) {
	cfg = cfg.withDefaults(b.cfg.display())
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new display: %w", err)
	}
	if b.lost.Load() {
		return nil, fmt.Errorf("new display: %s: %w", b.lostCause(), screen.ErrGone)
	}
	d := newDisplayValue(cfg, b)
	// Opening is bounded by ctx and a generous timeout of its own, not by
	// CommandTimeout: a new browser context takes a while on a busy machine.
	err := d.run(ctx, max(cfg.CommandTimeout, newDisplayTimeout), func(context.Context) error {
		bctx, err := b.browser.NewContext(pw.BrowserNewContextOptions{
			Viewport:          &pw.Size{Width: cfg.Viewport.W, Height: cfg.Viewport.H},
			Screen:            &pw.Size{Width: cfg.Viewport.W, Height: cfg.Viewport.H},
			DeviceScaleFactor: new(cfg.DPR),
			// Downloads are refused, as on a screen/cdp display without
			// a download directory; the page's attempt is noted.
			AcceptDownloads: new(false),
		})
		if err != nil {
			return fmt.Errorf("new browser context: %w", err)
		}
		d.setContext(bctx)
		// Pages that open from now on are followed as tabs (syncTabs);
		// the first one is the display's own.
		bctx.OnPage(d.pageAdded)
		page, err := bctx.NewPage()
		if err != nil {
			return fmt.Errorf("new page: %w", err)
		}
		tb := d.newTab(page)
		d.tabMu.Lock()
		d.tabs = []*tab{tb}
		d.tabMu.Unlock()
		d.cur.Store(tb)
		return nil
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("new display: %w", err), d.Close(ctx))
	}
	return d, nil
}

// Close closes the display's browser context and its page; a display from
// Open also closes its browser and driver. It waits for Playwright calls
// that a canceled context left behind; they fail once the page is gone.
// Close is idempotent; Capture and Perform fail with screen.ErrGone after
// it.
func (d *Display) Close(ctx context.Context) error {
	d.closeOnce.Do(func() {
		close(d.closed)
		d.mu.Lock() // no call starts after this
		defer d.mu.Unlock()
		err := d.closeContext() // ends calls that hang in the page
		d.wg.Wait()
		err = errors.Join(err, d.closeContext()) // opened by a NewDisplay that gave up
		if d.owned {
			err = errors.Join(err, d.b.Close(ctx))
		}
		d.closeErr = err
	})
	return d.closeErr
}

// newDisplayValue returns a display of b with no page yet: its active tab
// has none until NewDisplay opens one.
func newDisplayValue(cfg DisplayConfig, b *Browser) *Display {
	d := &Display{cfg: cfg, b: b, busy: make(chan struct{}, 1), closed: make(chan struct{}), addedCh: make(chan struct{}, 1)}
	d.cur.Store(&tab{state: newPageState(b.cfg.DismissDialogs)})
	return d
}

// setContext records the display's browser context.
func (d *Display) setContext(bctx pw.BrowserContext) {
	d.ctxMu.Lock()
	defer d.ctxMu.Unlock()
	d.bctx = bctx
}

// closeContext closes the display's browser context, once.
func (d *Display) closeContext() error {
	d.ctxMu.Lock()
	bctx := d.bctx
	if d.bctxClosed || bctx == nil {
		d.ctxMu.Unlock()
		return nil
	}
	d.bctxClosed = true
	d.ctxMu.Unlock()
	if err := bctx.Close(); err != nil && !d.b.lost.Load() {
		return fmt.Errorf("close browser context: %s", playwrightText(err))
	}
	return nil
}

// check returns an error wrapping screen.ErrGone if the display cannot work.
func (d *Display) check() error {
	select {
	case <-d.closed:
		return fmt.Errorf("display closed: %w", screen.ErrGone)
	default:
	}
	if c := d.goneCause(); c != "" {
		return fmt.Errorf("%s: %w", c, screen.ErrGone)
	}
	return nil
}

// goneCause says why the display can no longer work, or "" if it can.
func (d *Display) goneCause() string {
	if d.b.lost.Load() {
		return d.b.lostCause()
	}
	return d.tab().state.goneCause()
}

// run runs f, which makes Playwright calls, on a goroutine of its own and
// waits for it, for ctx to end, for timeout to pass, or for a JavaScript
// dialog to open (errBlocked). Only one f runs at
// a time: a call that an earlier run left behind must end first, within
// the same timeout. f gets a context that ends when run returns, to stop
// between calls (a held key is released then).
func (d *Display) run(ctx context.Context, timeout time.Duration, f func(ctx context.Context) error) error {
	if err := d.check(); err != nil {
		return err
	}
	blocked := d.tab().state.dialogOpened()
	select {
	case <-blocked:
		return errBlocked
	default:
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	unresponsive := func() error {
		return fmt.Errorf("no answer within %v: %w", timeout, ErrUnresponsive)
	}
	select {
	case d.busy <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-d.closed:
		return fmt.Errorf("display closed: %w", screen.ErrGone)
	case <-t.C:
		return unresponsive()
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	d.wg.Go(func() {
		defer func() { <-d.busy }()
		done <- f(fctx)
	})
	select {
	case err := <-done:
		return d.translate(ctx, err)
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return unresponsive()
	case <-d.closed:
		return fmt.Errorf("display closed: %w", screen.ErrGone)
	case <-blocked:
		// f goes on once the dialog is answered, holding busy till then.
		return errBlocked
	}
}

// errTabClosed marks a call that failed because the active tab closed
// under it; the display goes on in another tab.
var errTabClosed = errors.New("the tab closed")

// errBlocked marks a call whose wait ended because a JavaScript dialog
// opened (or was open): the page answers nothing until it is answered.
var errBlocked = fmt.Errorf("%w while a JavaScript dialog is open", ErrUnresponsive)

// translate turns an error of a Playwright call into one of ours: a gone
// browser or page wraps screen.ErrGone, and other Playwright errors keep
// their text but not their type. Errors of this package pass unchanged.
func (d *Display) translate(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if c := d.goneCause(); c != "" {
		return fmt.Errorf("%s: %w", c, screen.ErrGone)
	}
	if !errors.Is(err, pw.ErrPlaywright) && !errors.Is(err, pw.ErrTargetClosed) {
		return err
	}
	if errors.Is(err, pw.ErrTargetClosed) {
		if d.tab().state.isClosed() && d.check() == nil {
			// Only the tab closed: the display goes on in another.
			return errTabClosed
		}
		return fmt.Errorf("%s: %w", playwrightText(err), screen.ErrGone)
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return errors.New(playwrightText(err))
}

// playwrightText is the message of a Playwright error, without the call
// log Playwright appends to some.
func playwrightText(err error) string {
	s := strings.Replace(err.Error(), "playwright: ", "", 1)
	if i := strings.Index(s, "\nCall log:"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// logWriter logs the driver's output, line by line, at debug level.
type logWriter struct{ log *slog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	for line := range bytes.Lines(p) {
		if s := strings.TrimSpace(string(line)); s != "" {
			w.log.Debug(s)
		}
	}
	return len(p), nil
}
