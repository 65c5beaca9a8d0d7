package cdp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/spotter-harness/spotter/internal/chromeflags"
	"github.com/spotter-harness/spotter/screen"
)

// ErrNoBrowser is returned by Launch and Open when no Chromium binary is
// found.
var ErrNoBrowser = errors.New("chromium not found on PATH: install Debian's chromium package (apt-get install -y chromium)")

// Mode is how a browser's displays get their pages drawn, settled and
// captured. The zero Mode is ModeAuto.
type Mode uint8

const (
	// ModeAuto is FrameControl if chromium-headless-shell is on PATH (or
	// Config.Exec names a headless shell), and Screencast otherwise.
	ModeAuto Mode = iota
	// Screencast runs regular headless Chromium, which draws frames on its
	// own clock. A display watches a screencast of tiny images to see when
	// the page stops drawing, and captures with Page.captureScreenshot.
	Screencast
	// FrameControl runs chromium-headless-shell with begin-frame control:
	// the page is drawn only when the display runs a frame
	// (HeadlessExperimental.beginFrame). A display runs frames until one
	// draws nothing new and takes the screenshot from the next one, which
	// the compositor draws at the size the model wants.
	FrameControl
)

var modeNames = [...]string{ModeAuto: "auto", Screencast: "screencast", FrameControl: "frame-control"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", m)
}

// ParseMode parses "auto" (or ""), "screencast" or "frame-control".
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return ModeAuto, nil
	case "screencast":
		return Screencast, nil
	case "frame-control", "framecontrol", "frame":
		return FrameControl, nil
	}
	return ModeAuto, fmt.Errorf("display mode %q: want auto, screencast or frame-control", s)
}

// headlessShell is the binary of Chromium's headless shell, which alone
// implements begin-frame control.
const headlessShell = "chromium-headless-shell"

// debianShell is the binary of Debian's chromium-headless-shell package.
// Its /usr/bin/chromium-headless-shell is a script that runs the binary as
// its child without exec, so a signal to the process chromedp started (a
// kill when the browser does not close) would not reach the browser.
const debianShell = "/usr/lib/chromium/chromium-headless-shell"

// findHeadlessShell returns the path of the headless shell on PATH, or of
// the binary behind Debian's script.
func findHeadlessShell() (string, bool) {
	p, err := exec.LookPath(headlessShell)
	if err != nil {
		return "", false
	}
	if p == "/usr/bin/"+headlessShell {
		if fi, err := os.Stat(debianShell); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return debianShell, true
		}
	}
	return p, true
}

// ErrUnresponsive marks a page that did not answer a protocol command within
// the display's CommandTimeout, such as a page whose script runs an endless
// loop. The display may stay unusable until it navigates elsewhere or closes.
var ErrUnresponsive = errors.New("page is not responding")

// Defaults of Config.
const (
	DefaultSettleTimeout  = 3 * time.Second
	DefaultQuietWindow    = 30 * time.Millisecond
	DefaultCommandTimeout = 10 * time.Second
)

// Log attribute keys.
const (
	logKeyComponent = "component"
	logKeyFrame     = "frame"
	logKeySettle    = "settle"
	logKeyTimedOut  = "timed_out"
	logKeyMode      = "mode"
)

// browserCloseTimeout bounds a graceful browser shutdown; after it the
// process is killed.
const browserCloseTimeout = 5 * time.Second

// Config configures a browser and, as defaults, its displays.
type Config struct {
	// Mode is how displays draw and capture pages; ModeAuto (the zero
	// value) picks FrameControl when chromium-headless-shell is available.
	Mode Mode
	// Exec is the Chromium binary. Empty means chromium-headless-shell on
	// PATH for FrameControl, and otherwise the first of chromium,
	// chromium-browser and google-chrome found on PATH. Under ModeAuto, an
	// Exec whose name contains "headless-shell" or "headless_shell" means
	// FrameControl, any other Screencast.
	Exec string
	// Viewport is the CSS size of a display's viewport; zero means 1280x800.
	Viewport screen.Size
	// DPR is the device pixel ratio displays emulate; 0 means 1.
	DPR float64
	// Flags are extra Chromium command-line flags, such as
	// "--lang=de" or "--disable-smooth-scrolling".
	Flags []string
	// Logger receives the browser's diagnostics; nil means slog.Default().
	Logger *slog.Logger
	// SettleTimeout bounds the wait for a page to go quiet before a
	// capture; 0 means DefaultSettleTimeout.
	SettleTimeout time.Duration
	// QuietWindow is how long a page must draw no new frame to count as
	// quiet; 0 means DefaultQuietWindow.
	QuietWindow time.Duration
	// CommandTimeout bounds one protocol command (an input event, a
	// screenshot); a page that does not answer in time gives an error
	// wrapping ErrUnresponsive. 0 means DefaultCommandTimeout. Navigate
	// waits at least 30s for the server's response.
	CommandTimeout time.Duration

	// DismissDialogs makes displays dismiss JavaScript dialogs (alert,
	// confirm, prompt, beforeunload) as soon as they see them, with a note
	// for the model. By default a dialog stays open until the model answers
	// it with the Dialog action.
	DismissDialogs bool
	// DownloadDir is where displays save downloads: each display in a new
	// directory of its own below it. Empty means downloads are refused,
	// unless a display's DisplayConfig.DownloadDir is set.
	DownloadDir string
	// MaxDownloads is how many downloads a display saves; later ones are
	// canceled. 0 means DefaultMaxDownloads.
	MaxDownloads int
	// MaxDownloadBytes bounds the size of one download; a larger one is
	// canceled and its partial file removed. 0 means DefaultMaxDownloadBytes.
	MaxDownloadBytes int64
	// UploadDir is the directory that relative paths of the Upload action
	// are resolved against; empty means the working directory. Which paths
	// the model may name is the Policy's business (actions.Policy.Files).
	UploadDir string
	// StageFiles, when set, copies files of the host to where the browser
	// runs (a sandbox, whose browser cannot see the host's file system)
	// and returns the paths the browser knows them by, in order. The
	// Upload action hands the browser those. Nil means the browser shares
	// the host's file system.
	StageFiles func(ctx context.Context, paths []string) ([]string, error)
}

// Defaults of the download limits.
const (
	DefaultMaxDownloads     = 10
	DefaultMaxDownloadBytes = 100 << 20
)

func (c Config) withDefaults() Config {
	if c.Viewport == (screen.Size{}) {
		c.Viewport = screen.Size{W: 1280, H: 800}
	}
	c.DPR = cmp.Or(c.DPR, 1)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.SettleTimeout = cmp.Or(c.SettleTimeout, DefaultSettleTimeout)
	c.QuietWindow = cmp.Or(c.QuietWindow, DefaultQuietWindow)
	c.CommandTimeout = cmp.Or(c.CommandTimeout, DefaultCommandTimeout)
	c.MaxDownloads = cmp.Or(c.MaxDownloads, DefaultMaxDownloads)
	c.MaxDownloadBytes = cmp.Or(c.MaxDownloadBytes, DefaultMaxDownloadBytes)
	return c
}

// DisplayConfig configures one display. Each zero field takes the value of
// the browser's Config.
type DisplayConfig struct {
	Viewport       screen.Size
	DPR            float64
	SettleTimeout  time.Duration
	QuietWindow    time.Duration
	CommandTimeout time.Duration
	Logger         *slog.Logger

	DismissDialogs   bool   // or Config.DismissDialogs
	DownloadDir      string // the display's own download directory; empty: a new one below Config.DownloadDir
	MaxDownloads     int
	MaxDownloadBytes int64
	UploadDir        string
	// Proxy, when set, is the proxy server (as --proxy-server takes it)
	// that every request of the display's browser context goes through,
	// loopback included: a session's egress proxy in a browser that other
	// sessions share. Without it the display uses the browser's own.
	Proxy string

	downloadRoot string                                                      // Config.DownloadDir
	stageFiles   func(ctx context.Context, paths []string) ([]string, error) // Config.StageFiles
}

func (c DisplayConfig) withDefaults(b Config) DisplayConfig {
	if c.Viewport == (screen.Size{}) {
		c.Viewport = b.Viewport
	}
	c.DPR = cmp.Or(c.DPR, b.DPR)
	c.SettleTimeout = cmp.Or(c.SettleTimeout, b.SettleTimeout)
	c.QuietWindow = cmp.Or(c.QuietWindow, b.QuietWindow)
	c.CommandTimeout = cmp.Or(c.CommandTimeout, b.CommandTimeout)
	c.Logger = cmp.Or(c.Logger, b.Logger)
	c.DismissDialogs = c.DismissDialogs || b.DismissDialogs
	c.MaxDownloads = cmp.Or(c.MaxDownloads, b.MaxDownloads)
	c.MaxDownloadBytes = cmp.Or(c.MaxDownloadBytes, b.MaxDownloadBytes)
	c.UploadDir = cmp.Or(c.UploadDir, b.UploadDir)
	c.downloadRoot = b.DownloadDir
	c.stageFiles = b.StageFiles
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
	case c.MaxDownloads < 0 || c.MaxDownloadBytes < 0:
		return errors.New("negative download limit")
	}
	return nil
}

// Browser is a headless Chromium process. Its displays are tabs, each in its
// own browser context. A Browser is safe for concurrent use; the caller must
// call Close.
type Browser struct {
	cfg  Config
	log  *slog.Logger
	path string
	mode Mode // FrameControl or Screencast; the zero value means Screencast

	// ctx is chromedp's handle on the browser. It is not a request
	// context: chromedp binds the browser's lifetime to it, and cancels it
	// when the process dies.
	ctx         context.Context
	cancel      context.CancelFunc // stops the browser and its handler goroutines
	allocCancel context.CancelFunc // stops the allocator, waits for the process to be reaped

	closeOnce sync.Once
	closeErr  error
	// frameMu orders the frames of the browser's displays (frame
	// control). It lives and dies with the browser: a map of locks by
	// browser kept every browser ever started alive.
	frameMu sync.Mutex
}

// Launch starts a headless Chromium with a fresh temporary profile
// directory. ctx bounds the start only; the browser runs until Close. Close
// stops the process, ends chromedp's goroutines and removes the profile
// directory.
func Launch(ctx context.Context, cfg Config) (*Browser, error) {
	cfg = cfg.withDefaults()
	if err := (DisplayConfig{}).withDefaults(cfg).validate(); err != nil {
		return nil, fmt.Errorf("launch chromium: %w", err)
	}
	// cfg.Flags come after CommandLine (which has none of the browser's
	// own traffic); their --disable-features join CommandLine's, since
	// Chromium reads only one.
	rest, disabled := chromeflags.SplitFeatures(cfg.Flags)
	flags, err := parseFlags(rest)
	if err != nil {
		return nil, fmt.Errorf("launch chromium: %w", err)
	}
	mode, path, err := findBrowser(cfg.Mode, cfg.Exec)
	if err != nil {
		return nil, err
	}
	common, err := parseFlags(CommandLine(mode, disabled...))
	if err != nil {
		return nil, fmt.Errorf("launch chromium: %w", err)
	}
	opts := append([]chromedp.ExecAllocatorOption{
		// The browser gets only the variables it needs (BrowserEnv), never
		// the tokens and provider keys of the process that starts it.
		chromedp.NoInheritEnv,
		chromedp.Env(BrowserEnv(os.Environ())...),
		chromedp.ExecPath(path),
	}, common...)
	opts = append(opts, flags...)
	log := cfg.Logger.With(logKeyComponent, "chromium", logKeyMode, mode.String())
	// The browser outlives ctx, so its contexts derive from one that is
	// never canceled by the caller.
	actx, acancel := chromedp.NewExecAllocator(context.WithoutCancel(ctx), opts...)
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
	b := &Browser{cfg: cfg, log: log, path: path, mode: mode, ctx: bctx, cancel: bcancel, allocCancel: acancel}

	// The first call on bctx starts the process and binds it to bctx, so it
	// must not carry ctx's deadline; wait for it here instead.
	started := make(chan error, 1)
	var initial []*target.Info
	go func() {
		var err error
		initial, err = chromedp.Targets(bctx)
		started <- err
	}()
	select {
	case err = <-started:
	case <-ctx.Done():
		bcancel()
		<-started
		err = context.Cause(ctx)
	}
	if err != nil {
		bcancel()
		acancel()
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	b.closeStartTabs(ctx, initial)
	return b, nil
}

// browserVars are the environment variables a browser keeps (BrowserEnv);
// a trailing "*" matches any suffix.
var browserVars = []string{
	"PATH", "HOME", "TMPDIR", "USER", "LOGNAME",
	"LANG", "LANGUAGE", "LC_*", "TZ",
	"FONTCONFIG_FILE", "FONTCONFIG_PATH", "FONTCONFIG_SYSROOT",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS", "XDG_RUNTIME_DIR",
	"DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY",
	"CHROME_DEVEL_SANDBOX",
}

// BrowserEnv returns the part of environ (KEY=value entries, as
// os.Environ returns them) that a browser is started with: the search
// path, home, temporary directory, user, locale, time zone, fonts, XDG
// directories and display. Everything else stays out, tokens and provider
// keys (SPOTTER_TOKEN, ANTHROPIC_API_KEY, ...) and proxy settings
// included. TMPDIR is always set, to os.TempDir() if environ has none.
func BrowserEnv(environ []string) []string {
	var out []string
	tmp := false
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !slices.ContainsFunc(browserVars, func(v string) bool {
			p, wild := strings.CutSuffix(v, "*")
			return k == v || wild && strings.HasPrefix(k, p)
		}) {
			continue
		}
		tmp = tmp || k == "TMPDIR"
		out = append(out, kv)
	}
	if !tmp {
		out = append(out, "TMPDIR="+os.TempDir())
	}
	return out
}

// parseFlags turns "--name=value" and "--name" into allocator options.
func parseFlags(flags []string) ([]chromedp.ExecAllocatorOption, error) {
	var opts []chromedp.ExecAllocatorOption
	for _, f := range flags {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if name == "" || strings.HasPrefix(name, "-") || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("bad flag %q: want --name or --name=value", f)
		}
		if hasValue {
			opts = append(opts, chromedp.Flag(name, value))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	return opts, nil
}

// findBrowser resolves mode and returns the Chromium binary for it.
func findBrowser(mode Mode, name string) (Mode, string, error) {
	if mode > FrameControl {
		return mode, "", fmt.Errorf("launch chromium: unknown display mode %v", mode)
	}
	if name != "" {
		p, err := findChromium(name)
		if err != nil {
			return mode, "", err
		}
		if mode == ModeAuto {
			mode = Screencast
			if base := filepath.Base(p); strings.Contains(base, "headless-shell") || strings.Contains(base, "headless_shell") {
				mode = FrameControl
			}
		}
		return mode, p, nil
	}
	if mode != Screencast {
		if p, ok := findHeadlessShell(); ok {
			return FrameControl, p, nil
		}
		if mode == FrameControl {
			return mode, "", fmt.Errorf("%s not found on PATH, which frame control needs (apt-get install -y %s): %w",
				headlessShell, headlessShell, ErrNoBrowser)
		}
	}
	p, err := findChromium("")
	return Screencast, p, err
}

// findChromium returns the path of the Chromium binary: name, or the first
// regular Chromium found on PATH.
func findChromium(name string) (string, error) {
	if name != "" {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("chromium %q: %w", name, err)
		}
		return p, nil
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}

// Mode returns how the browser's displays draw and capture pages:
// FrameControl or Screencast.
func (b *Browser) Mode() Mode {
	if b.mode == FrameControl {
		return FrameControl
	}
	return Screencast
}

// Close stops the browser: it closes every display's tab, asks Chromium to
// exit, kills it if it has not within a few seconds, and removes the profile
// directory. When Close returns, the process has been reaped and chromedp's
// goroutines for it have ended. Close runs to the end even if its context is
// already canceled; it is bounded by its own timeouts.
// Displays of a closed browser fail with errors wrapping screen.ErrGone;
// they should still be closed. Close is idempotent.
func (b *Browser) Close(context.Context) error {
	b.closeOnce.Do(func() {
		tctx, cancel := context.WithTimeout(b.ctx, browserCloseTimeout)
		err := chromedp.Cancel(tctx)
		cancel()
		b.cancel()
		b.allocCancel()
		if err != nil && !b.lost() {
			b.closeErr = fmt.Errorf("close chromium: %w", err)
		}
	})
	return b.closeErr
}

// lost reports whether the connection to the browser process is gone.
func (b *Browser) lost() bool {
	c := chromedp.FromContext(b.ctx)
	if c == nil || c.Browser == nil {
		return true
	}
	select {
	case <-c.Browser.LostConnection:
		return true
	default:
		return false
	}
}

// Open launches a browser with one display. Closing the display closes the
// browser.
func Open(ctx context.Context, cfg Config) (*Display, error) {
	b, err := Launch(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d, err := b.NewDisplay(ctx, DisplayConfig{})
	if err != nil {
		return nil, errors.Join(err, b.Close(ctx))
	}
	d.owned = b
	return d, nil
}

// closeStartTabs closes the tabs the browser opened as it started (its
// about:blank in the default browser context). No display uses them: each
// opens a tab in a browser context of its own. Each start tab holds a
// renderer process, about 14 MB that a browser of one session paid for
// nothing (docs/PERFORMANCE.md, "Start and memory"). A tab that cannot be
// closed costs only that memory, so a failure is logged, not returned.
func (b *Browser) closeStartTabs(ctx context.Context, tabs []*target.Info) {
	br := chromedp.FromContext(b.ctx).Browser
	for _, t := range tabs {
		if t.Type != "page" {
			continue
		}
		if _, err := cdp.Call(ctx, br, target.CloseTarget, target.CloseTargetParams{TargetID: t.TargetID}); err != nil {
			b.log.Debug("close the start tab", "err", err)
		}
	}
}
