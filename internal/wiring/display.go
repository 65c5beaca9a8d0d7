package wiring

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/containerd"
	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/isolate/local"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// DefaultMaxRestarts is how often a display may be started again after its
// sandbox or browser died, when DisplayRequest.MaxRestarts is zero.
const DefaultMaxRestarts = 2

// SandboxConfig says how Sandboxes starts sandboxes.
type SandboxConfig struct {
	// Backend is isolate.Local or isolate.Containerd. Required.
	Backend isolate.Backend
	// Containerd configures the containerd runtime (socket, agent
	// program, state directory); its zero value is containerd's defaults.
	Containerd containerd.Config
	// MemoryMiB, CPUs and Pids are each sandbox's limits where a request
	// gives none; zero means isolate's defaults. Only containerd enforces
	// them.
	MemoryMiB uint64
	CPUs      float64
	Pids      int64
	// Warm is how many containerd sandboxes are kept started ahead of
	// demand, each with a browser on a blank page of the default display
	// (1280x800 at DPR 1) and no egress until a session takes it; 0 means
	// none. A session whose display and limits match takes one instead of
	// starting one, and the pool starts another in the background. Each
	// serves one session. The local backend has no pool.
	Warm int
	// Logger receives the sandboxes' diagnostics; nil means slog.Default().
	Logger *slog.Logger
	// Auto says that Backend was chosen for the caller (--isolate auto):
	// a display that a sandbox of Backend cannot hold (a launched
	// Playwright browser in containerd) then runs where it can, on the
	// host behind an egress proxy of the same allowlist, with a note,
	// instead of being refused.
	Auto bool
}

// Sandboxes starts the sandboxes of many runs, of one backend. With
// containerd it holds one connection to the daemon, which NewSandboxes
// opens after removing what crashed runs left behind. It is safe for
// concurrent use; the caller must call Close.
type Sandboxes struct {
	cfg  SandboxConfig
	rt   *containerd.Runtime // Containerd only
	warm *warmPool           // nil without SandboxConfig.Warm
}

// NewSandboxes prepares to start sandboxes of cfg.Backend. For containerd
// it connects to the daemon and removes the containers, tasks, state
// directories and cgroups of Spotter processes that no longer run; an error
// wraps isolate.ErrUnavailable when the daemon does not answer. ctx bounds
// that work only.
func NewSandboxes(ctx context.Context, cfg SandboxConfig) (*Sandboxes, error) {
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	s := &Sandboxes{cfg: cfg}
	switch cfg.Backend {
	case isolate.Local:
	case isolate.Containerd:
		c := cfg.Containerd
		c.Logger = cmp.Or(c.Logger, cfg.Logger)
		rt, err := containerd.New(ctx, c)
		if err != nil {
			return nil, err
		}
		s.rt = rt
		if cfg.Warm > 0 {
			spec := DisplaySpec{}
			spec.Defaults()
			s.warm = newWarmPool(rt, cfg.Warm, s.limits(isolate.Config{}),
				cdp.Config{Viewport: spec.Size(), DPR: spec.DPR, Logger: cfg.Logger}, cfg.Logger)
		}
	default:
		return nil, fmt.Errorf("sandbox backend %q: want local or containerd", cfg.Backend)
	}
	return s, nil
}

// Backend returns the backend the sandboxes run on.
func (s *Sandboxes) Backend() isolate.Backend { return s.cfg.Backend }

// Behind reports whether a display of spec d runs behind the egress proxy
// of one of these sandboxes: in a sandbox (DisplaySpec.Sandboxed), or, for
// a launched Playwright browser that containerd cannot hold, under Auto, on
// the host behind a proxy of its own.
func (s *Sandboxes) Behind(d DisplaySpec) bool {
	return d.Sandboxed(s.Backend()) || s.fallsBack(d)
}

// fallsBack reports whether a display of spec d, which these sandboxes
// cannot hold, runs on the host behind an egress proxy instead (Auto).
func (s *Sandboxes) fallsBack(d DisplaySpec) bool {
	return s.cfg.Auto && s.Backend() == isolate.Containerd && d.Backend == Playwright && d.WSEndpoint == ""
}

// playwrightOnHost is the note of a Playwright display that --isolate auto
// runs on the host.
const playwrightOnHost = "display.backend playwright launches its browser on this host, behind an egress proxy with the " +
	"task's allowlist: a containerd sandbox (which --isolate auto chose) cannot hold a Playwright browser"

// Start starts one session's sandbox, with the limits of SandboxConfig
// where cfg has none. The caller must close it.
func (s *Sandboxes) Start(ctx context.Context, cfg isolate.Config) (isolate.Sandbox, error) {
	cfg = s.limits(cfg)
	if s.rt != nil {
		t0 := time.Now()
		sb, err := s.rt.Start(ctx, cfg)
		observeStart(isolate.Containerd, t0, err)
		if err != nil {
			return nil, err
		}
		return sb, nil
	}
	sb, err := startLocal(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return sb, nil
}

// limits returns cfg with SandboxConfig's limits and logger where it has
// none.
func (s *Sandboxes) limits(cfg isolate.Config) isolate.Config {
	cfg.MemoryMiB = cmp.Or(cfg.MemoryMiB, s.cfg.MemoryMiB)
	cfg.CPUs = cmp.Or(cfg.CPUs, s.cfg.CPUs)
	cfg.Pids = cmp.Or(cfg.Pids, s.cfg.Pids)
	cfg.Logger = cmp.Or(cfg.Logger, s.cfg.Logger)
	return cfg
}

// open opens a browser display in a sandbox for the session of cfg: a warm
// one claimed for it when one fits, else one started now.
func (s *Sandboxes) open(ctx context.Context, cfg isolate.Config, view cdp.Config) (*isolate.Display, isolate.Sandbox, error) {
	cfg = s.limits(cfg)
	if s.warm != nil {
		if d, sb, ok := s.warm.take(ctx, cfg, view); ok {
			return d, sb, nil
		}
	}
	sb, err := s.Start(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	d, err := isolate.Open(ctx, sb, view)
	if err != nil {
		return nil, nil, errors.Join(err, sb.Close(context.WithoutCancel(ctx)))
	}
	return d, sb, nil
}

// Warm returns how many warm sandboxes are ready now and how many the pool
// keeps; both are 0 without a pool.
func (s *Sandboxes) Warm() (ready, size int) {
	if s == nil || s.warm == nil {
		return 0, 0
	}
	return s.warm.counts()
}

// Close drains the warm pool, closes the sandboxes still open and the
// connection to the daemon. It runs to the end even when ctx is canceled.
func (s *Sandboxes) Close(ctx context.Context) error {
	if s.rt == nil {
		return nil
	}
	var err error
	if s.warm != nil {
		err = s.warm.close(ctx)
	}
	return errors.Join(err, s.rt.Close(ctx))
}

// DisplayRequest says what display OpenDisplay opens.
type DisplayRequest struct {
	// Display is the backend, its size and where it is; its zero value is
	// a 1280x800 Chromium at DPR 1. It must pass DisplaySpec.Check.
	Display DisplaySpec
	// Browser is the host's Chromium executable, for displays that run it
	// on the host (no sandbox, or the local backend); empty means the one
	// on PATH.
	Browser string
	// StartURL is opened once a browser display is up, and again when the
	// display is started anew before any other page was seen. Empty means
	// about:blank. A desktop or VNC display opens none.
	StartURL string
	// Getenv supplies a vnc display's password (DisplaySpec.PasswordEnv);
	// nil means no environment.
	Getenv func(string) string
	// Sandboxes, if not nil, runs the browser in a sandbox of its own,
	// whose only way out is an egress proxy that allows Egress. Nil means
	// a browser on the host, without a proxy.
	Sandboxes *Sandboxes
	// Sandbox configures the sandbox: its name, limits and extra flags.
	// Its Egress is replaced by Egress, and its OnDecision by OnDecision.
	Sandbox isolate.Config
	// Egress is what the sandbox may reach; see EgressFor.
	Egress egress.Policy
	// HostEgress, for a browser on the host (Sandboxes nil), sends every
	// request of the browser, loopback included, through an egress proxy
	// on the host's loopback that enforces this policy: the proxy of
	// isolate/local, with Sandbox's name and OnDecision. OpenWeb is the
	// policy of `spotter serve --isolate none`. Nil means no proxy.
	HostEgress *egress.Policy
	// OnDecision, if not nil, receives each egress decision, from the
	// proxy's goroutines.
	OnDecision func(egress.Decision)
	// OnNote, if not nil, receives what happened to the display that a
	// trace should show: a sandbox that died and was started anew.
	OnNote func(string)
	// Shared, if not nil, opens a chromium display on the host (no
	// sandbox, or a local one) as a browser context of one of Shared's
	// browsers, instead of in a browser of its own: about a quarter of
	// the memory (24 MB a session against 84 here) and no browser start.
	// Its requests still go through the display's own egress proxy
	// (HostEgress, or the local sandbox's), set for its browser context
	// alone. A display in a containerd sandbox cannot share.
	Shared *cdp.Pool
	// MaxRestarts is how often the display may be started anew after its
	// sandbox or browser died; zero means DefaultMaxRestarts, negative
	// means never.
	MaxRestarts int
	// Logger receives diagnostics; nil means slog.Default().
	Logger *slog.Logger
}

// A Display is what OpenDisplay returns: a harness.Display that starts
// itself anew when it dies, which the caller must close. A browser display
// (chromium, playwright) is a *BrowserDisplay, which also says what lies
// under a point (HitTest, Focused) and which dialog is open; the others
// are an *OpenedDisplay, which has no DOM: the approval rules then decide
// on the action alone, and say so.
type Display interface {
	Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error)
	Perform(ctx context.Context, m screen.Mapped) error
	Close(ctx context.Context) error
	// Restarts returns a note for each time the display was started anew.
	Restarts() []string
	// FirstShot returns how long it took from OpenDisplay to the first
	// screenshot; zero before the first Capture.
	FirstShot() time.Duration
}

// inner is the display an OpenedDisplay currently drives.
type inner interface {
	Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error)
	Perform(ctx context.Context, m screen.Mapped) error
	Close(ctx context.Context) error
}

// OpenedDisplay is a display of any backend, in a sandbox or not, that
// starts itself anew when it (or its sandbox) dies. It is a
// harness.Display. Its methods may be called from several goroutines, one
// at a time. The caller must call Close.
//
// When the display dies (an error wrapping screen.ErrGone or
// isolate.ErrDead: out of memory, a crash), Perform and Capture close what is
// left of it and open a fresh one, in a fresh sandbox, at the last URL seen
// (a desktop or a VNC connection has none: a fresh desktop is started, a
// VNC server connected to again).
// A Perform that died returns an error for the model that says so; it wraps
// isolate.ErrDead (and isolate.ErrOOM) but not screen.ErrGone, so the run
// goes on. A Capture returns the fresh display's screenshot with a note in
// Shot.Events. After MaxRestarts restarts, the error is returned as it is.
type OpenedDisplay struct {
	req DisplayRequest
	log *slog.Logger

	mu       sync.Mutex
	sb       isolate.Sandbox // nil without a sandbox
	disp     inner           // nil once closed, or after a failed restart
	lastURL  string
	deaths   map[string]int // deaths of the display by the URL on screen
	restarts []string
	closed   bool
	// firstShot is how long the first display took from the request to
	// its first screenshot, set by the first Capture.
	firstShot time.Duration
	opened    time.Time
	// start starts a display and its sandbox; tests replace it.
	start func(ctx context.Context, req DisplayRequest) (inner, isolate.Sandbox, error)
	// current is disp, for Dialog and Watch, which must not wait for a
	// Perform; swaps tells a watch that it changed (live.go).
	current atomic.Pointer[innerRef]
	swaps   swaps
}

// innerRef holds the current inner display for OpenedDisplay.Dialog.
type innerRef struct{ d inner }

// OpenDisplay opens the display req asks for (req.Display.Backend) and
// navigates a browser display to req.StartURL. ctx bounds the start only.
//
// Chromium runs on the host, or in a sandbox of req.Sandboxes. A desktop
// runs on the host, or, with containerd Sandboxes, in a sandbox whose only
// way out is the egress proxy; with local Sandboxes it runs on the host, and
// its apps have the host's network. Playwright launches Chromium on the host
// (behind the local egress proxy when req asks for one; not in a containerd
// sandbox), or connects to req.Display.WSEndpoint. A VNC display connects to
// a server that runs elsewhere, whose network is its own.
func OpenDisplay(ctx context.Context, req DisplayRequest) (Display, error) {
	req.Display.Defaults()
	if err := req.Display.Check(); err != nil {
		return nil, err
	}
	if err := req.Display.CheckStartURL(req.StartURL); err != nil {
		return nil, err
	}
	start, err := starter(req)
	if err != nil {
		return nil, err
	}
	d, err := openDisplay(ctx, req, start)
	if err != nil {
		return nil, err
	}
	if req.Sandboxes != nil && req.Sandboxes.fallsBack(req.Display) {
		req.Logger.Info(playwrightOnHost)
		d.note(playwrightOnHost)
	}
	if req.Display.Browser() {
		return &BrowserDisplay{d}, nil
	}
	return d, nil
}

func openDisplay(ctx context.Context, req DisplayRequest, start func(context.Context, DisplayRequest) (inner, isolate.Sandbox, error)) (*OpenedDisplay, error) {
	req.Display.Defaults()
	req.Logger = cmp.Or(req.Logger, slog.Default())
	req.StartURL = cmp.Or(req.StartURL, "about:blank")
	if !req.Display.Browser() {
		req.StartURL = "about:blank" // nothing to open
	}
	if req.MaxRestarts == 0 {
		req.MaxRestarts = DefaultMaxRestarts
	}
	d := &OpenedDisplay{req: req, log: req.Logger, lastURL: req.StartURL,
		deaths: map[string]int{}, opened: time.Now(), start: start}
	if err := d.open(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// startChromium starts a sandbox (if req asks for one), a browser and a
// display.
func startChromium(ctx context.Context, req DisplayRequest) (inner, isolate.Sandbox, error) {
	cfg := cdp.Config{Exec: req.Browser, Viewport: req.Display.Size(), DPR: req.Display.DPR, Logger: req.Logger}
	sc := req.Sandbox
	var sb isolate.Sandbox
	switch {
	case req.Sandboxes == nil && req.HostEgress == nil:
		var cd *cdp.Display
		var err error
		if req.Shared != nil {
			cd, err = sharedDisplay(ctx, req.Shared, cfg, "")
		} else {
			cd, err = cdp.Open(ctx, cfg)
		}
		if err != nil {
			return nil, nil, err
		}
		return cd, nil, nil
	case req.Sandboxes == nil:
		// The local backend's proxy, which is all a host browser gets.
		sc.Egress, sc.OnDecision = *req.HostEgress, req.OnDecision
		sc.Logger = cmp.Or(sc.Logger, req.Logger)
		lsb, err := startLocal(ctx, sc)
		if err != nil {
			return nil, nil, err
		}
		sb = lsb
	case req.Shared == nil:
		sc.Egress, sc.OnDecision = req.Egress, req.OnDecision
		d, sb, err := req.Sandboxes.open(ctx, sc, cfg)
		if err != nil {
			return nil, nil, err
		}
		return d, sb, nil
	default:
		sc.Egress, sc.OnDecision = req.Egress, req.OnDecision
		var err error
		if sb, err = req.Sandboxes.Start(ctx, sc); err != nil {
			return nil, nil, err
		}
	}
	if req.Shared != nil {
		lsb, ok := sb.(*local.Sandbox)
		if !ok {
			return nil, nil, errors.Join(fmt.Errorf("%w: a shared browser runs on the host; a display in a %s sandbox runs its own",
				ErrSpec, req.Sandboxes.Backend()), sb.Close(context.WithoutCancel(ctx)))
		}
		cd, err := sharedDisplay(ctx, req.Shared, cfg, "http://"+lsb.ProxyAddr())
		if err != nil {
			return nil, nil, errors.Join(err, sb.Close(context.WithoutCancel(ctx)))
		}
		return cd, sb, nil
	}
	id, err := isolate.Open(ctx, sb, cfg)
	if err != nil {
		return nil, nil, errors.Join(err, sb.Close(context.WithoutCancel(ctx)))
	}
	return id, sb, nil
}

// sharedDisplay opens a display of cfg's size as a browser context of one
// of shared's browsers, whose requests go through proxy if it is set.
func sharedDisplay(ctx context.Context, shared *cdp.Pool, cfg cdp.Config, proxy string) (*cdp.Display, error) {
	return shared.NewDisplay(ctx, cdp.DisplayConfig{Viewport: cfg.Viewport, DPR: cfg.DPR, Logger: cfg.Logger, Proxy: proxy})
}

// open starts a display and navigates it to d.lastURL.
func (d *OpenedDisplay) open(ctx context.Context) error {
	disp, sb, err := d.start(ctx, d.req)
	if err != nil {
		return err
	}
	if d.lastURL != "about:blank" {
		if err := disp.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: d.lastURL}}); err != nil {
			err = fmt.Errorf("open %s: %w", d.lastURL, err)
			cctx := context.WithoutCancel(ctx)
			if sb != nil {
				return errors.Join(err, disp.Close(cctx), sb.Close(cctx))
			}
			return errors.Join(err, disp.Close(cctx))
		}
	}
	d.sb, d.disp = sb, disp
	d.current.Store(&innerRef{disp})
	d.swaps.swap(false)
	return nil
}

// Capture takes a screenshot. See OpenedDisplay for what happens when the
// display has died.
func (d *OpenedDisplay) Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.disp == nil {
		return screen.Shot{}, d.goneErr()
	}
	shot, err := d.disp.Capture(ctx, o)
	if err == nil {
		d.seen(shot)
		return shot, nil
	}
	note, rerr := d.restart(ctx, err)
	if rerr != nil {
		return screen.Shot{}, rerr
	}
	shot, err = d.disp.Capture(ctx, o)
	if err != nil {
		return screen.Shot{}, fmt.Errorf("capture after a restart: %w", err)
	}
	d.seen(shot)
	shot.Events = append(shot.Events, note)
	return shot, nil
}

func (d *OpenedDisplay) seen(shot screen.Shot) {
	if d.firstShot == 0 {
		d.firstShot = time.Since(d.opened)
	}
	if u := shot.Frame.URL; u != "" && !strings.HasPrefix(u, "chrome-error:") {
		d.lastURL = u
	}
}

// Perform runs one action. See OpenedDisplay for what happens when the
// display has died.
func (d *OpenedDisplay) Perform(ctx context.Context, m screen.Mapped) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.disp == nil {
		return d.goneErr()
	}
	// The last URL is the last one a screenshot showed, not where a
	// navigation went: a page that kills its sandbox is not loaded again.
	err := d.disp.Perform(ctx, m)
	if err == nil {
		return nil
	}
	note, rerr := d.restart(ctx, err)
	if rerr != nil {
		return rerr
	}
	return &restartError{msg: "this action did not complete: " + note, errs: sentinels(err)}
}

// restart opens a fresh display when err says the current one died, and
// returns a note for the model; otherwise, or when it may not or cannot,
// it returns err (or why the restart failed, with err).
func (d *OpenedDisplay) restart(ctx context.Context, err error) (string, error) {
	dead := errors.Is(err, screen.ErrGone) || errors.Is(err, isolate.ErrDead)
	if !dead || ctx.Err() != nil || d.closed {
		return "", err
	}
	what := "browser"
	// A local sandbox is only the session's egress proxy, in this process:
	// what died ran on the host.
	_, onHost := d.sb.(*local.Sandbox)
	switch {
	case d.sb != nil && !onHost:
		what = "sandbox"
	case !d.req.Display.Browser():
		what = d.req.Display.Backend + " display"
	}
	d.closeInner(ctx)
	metricCrashes.WithLabelValues(strings.TrimSuffix(what, " display")).Inc()
	if d.req.MaxRestarts < 0 || len(d.restarts) >= d.req.MaxRestarts {
		if d.req.MaxRestarts >= 0 { // below 0 its owner relaunches it, and counts that (Relaunched)
			metricRelaunches.WithLabelValues(RelaunchRefused).Inc()
		}
		d.note(fmt.Sprintf("the %s died (%v); it was started anew %d times already, so the run ends", what, err, len(d.restarts)))
		return "", err
	}
	// A page that was on screen when the display died may well have
	// killed it: after a second death there, the restart goes to the start
	// URL instead, and failing that to a blank page.
	d.deaths[d.lastURL]++
	switch {
	case d.deaths[d.lastURL] <= 1:
	case d.deaths[d.req.StartURL] == 0:
		d.lastURL = d.req.StartURL
	default:
		d.lastURL = "about:blank"
	}
	if oerr := d.open(ctx); oerr != nil {
		metricRelaunches.WithLabelValues(RelaunchFailed).Inc()
		d.note(fmt.Sprintf("the %s died (%v) and could not be started anew: %v", what, err, oerr))
		return "", fmt.Errorf("%w; starting it anew failed: %v", err, oerr)
	}
	note := fmt.Sprintf("The %s died (%v). It was started anew at %s; the page was loaded afresh, so anything not saved by the site is lost.", what, cause(err), d.lastURL)
	metricRelaunches.WithLabelValues(RelaunchOK).Inc()
	d.restarts = append(d.restarts, note)
	d.note(note)
	d.log.WarnContext(ctx, "display restarted", "reason", err, "url", d.lastURL)
	return note, nil
}

// cause returns why a display died, without the chain of wrapped calls
// ("capture: Page.getLayoutMetrics: ... (sandbox x was killed: ...)") when
// the sandbox said why.
func cause(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, "(sandbox "); i >= 0 && strings.HasSuffix(s, ")") {
		return s[i+1 : len(s)-1]
	}
	return s
}

func (d *OpenedDisplay) note(s string) {
	if d.req.OnNote != nil {
		d.req.OnNote(s)
	}
}

func (d *OpenedDisplay) goneErr() error {
	return fmt.Errorf("display is closed or could not be started anew: %w", screen.ErrGone)
}

// closeInner closes the current display and sandbox, if any.
func (d *OpenedDisplay) closeInner(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	var errs []error
	if d.disp != nil {
		errs = append(errs, d.disp.Close(ctx))
	}
	if d.sb != nil {
		errs = append(errs, d.sb.Close(ctx))
	}
	d.disp, d.sb = nil, nil
	d.current.Store(nil)
	d.swaps.swap(d.closed)
	return errors.Join(errs...)
}

// Restarts returns a note for each time the display was started anew.
func (d *OpenedDisplay) Restarts() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.restarts...)
}

// FirstShot returns how long it took from OpenDisplay to the first
// screenshot, sandbox start included; zero before the first Capture.
func (d *OpenedDisplay) FirstShot() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.firstShot
}

// Close closes the display and its sandbox. It runs to the end even when
// ctx is canceled, and is idempotent.
func (d *OpenedDisplay) Close(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	return d.closeInner(ctx)
}

// BrowserDisplay is an OpenedDisplay whose display is a browser with a
// DOM: approval rules and secret decisions look at the element under a
// point, the focused element and the open dialog.
type BrowserDisplay struct{ *OpenedDisplay }

// errNoDOM is what HitTest and Focused answer for a display that cannot
// inspect its page (tests' fakes).
var errNoDOM = fmt.Errorf("%w: this display cannot inspect its page", screen.ErrUnsupported)

// onPage runs fn on the current display, which must be a T (a display
// that can inspect its page); it waits for a Perform or Capture in
// progress.
func onPage[T, R any](b *BrowserDisplay, fn func(T) (R, error)) (R, error) {
	d := b.OpenedDisplay
	d.mu.Lock()
	defer d.mu.Unlock()
	var zero R
	if d.disp == nil {
		return zero, d.goneErr()
	}
	t, ok := d.disp.(T)
	if !ok {
		return zero, errNoDOM
	}
	return fn(t)
}

// HitTest returns the element a click at p (CSS px) would reach, as
// cdp.Display.HitTest does, on the current display; it waits for a Perform
// or Capture in progress. Approval rules use it.
func (b *BrowserDisplay) HitTest(ctx context.Context, p actions.Point) (screen.Target, error) {
	return onPage(b, func(d interface {
		HitTest(context.Context, actions.Point) (screen.Target, error)
	}) (screen.Target, error) {
		return d.HitTest(ctx, p)
	})
}

// Focused returns the element that has the keyboard focus, as
// cdp.Display.Focused does, on the current display.
func (b *BrowserDisplay) Focused(ctx context.Context) (screen.Target, error) {
	return onPage(b, func(d interface {
		Focused(context.Context) (screen.Target, error)
	}) (screen.Target, error) {
		return d.Focused(ctx)
	})
}

// Snapshot returns the current page's accessibility tree as text with
// element references, as cdp.Display.Snapshot does.
func (b *BrowserDisplay) Snapshot(ctx context.Context) (screen.Snapshot, error) {
	return onPage(b, func(d interface {
		Snapshot(context.Context) (screen.Snapshot, error)
	}) (screen.Snapshot, error) {
		return d.Snapshot(ctx)
	})
}

// Locate finds the element of a Snapshot's reference on the current page,
// scrolled into view, as cdp.Display.Locate does. A display started anew
// after it died has none of the old page's references.
func (b *BrowserDisplay) Locate(ctx context.Context, ref string) (screen.Located, error) {
	return onPage(b, func(d interface {
		Locate(context.Context, string) (screen.Located, error)
	}) (screen.Located, error) {
		return d.Locate(ctx, ref)
	})
}

// Eval evaluates a JavaScript expression in an isolated world of the
// current page and returns its value as JSON, as cdp.Display.Eval does:
// `spotter test`'s checks read the end state with it. The page's own
// scripts cannot see or change what it does.
func (b *BrowserDisplay) Eval(ctx context.Context, expr string) (json.RawMessage, error) {
	return onPage(b, func(d interface {
		Eval(context.Context, string) (json.RawMessage, error)
	}) (json.RawMessage, error) {
		return d.Eval(ctx, expr)
	})
}

// Dialog reports the JavaScript dialog open on the current display, if
// any. Like cdp.Display.Dialog, it does not wait for a Perform or Capture.
func (b *BrowserDisplay) Dialog() (screen.Dialog, bool) {
	ref := b.current.Load()
	if ref == nil {
		return screen.Dialog{}, false
	}
	dr, ok := ref.d.(interface{ Dialog() (screen.Dialog, bool) })
	if !ok {
		return screen.Dialog{}, false
	}
	return dr.Dialog()
}

// restartError is a Perform error on a display that died and was started
// anew: it wraps isolate.ErrDead (and ErrOOM), but not screen.ErrGone,
// since the display works again.
type restartError struct {
	msg  string
	errs []error
}

func (e *restartError) Error() string   { return e.msg }
func (e *restartError) Unwrap() []error { return e.errs }

// sentinels returns the isolate sentinels err wraps, and at least
// isolate.ErrDead.
func sentinels(err error) []error {
	errs := []error{isolate.ErrDead}
	if errors.Is(err, isolate.ErrOOM) {
		errs = append(errs, isolate.ErrOOM)
	}
	return errs
}

// OpenWeb is the egress policy of a browser on the host under `spotter
// serve --isolate none`: every public host on every port ("*"), but no
// internal address (loopback, private, link-local such as the cloud
// metadata service 169.254.169.254) unless the policy's hosts or the start
// URL's host name it exactly (see EgressFor and egress.Policy).
func OpenWeb(hosts []string, startURL string) egress.Policy {
	p := EgressFor(hosts, startURL)
	if !slices.Contains(p.Allow, "*") {
		p.Allow = append([]string{"*"}, p.Allow...)
	}
	return p
}

// EgressFor is the egress policy of a task: the policy's navigation hosts
// and the start URL's host. The demo app's placeholder "demo" must already
// be replaced by its address.
func EgressFor(hosts []string, startURL string) egress.Policy {
	allow := append([]string(nil), hosts...)
	if u, err := url.Parse(startURL); err == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https") &&
		!slices.Contains(allow, u.Host) {
		allow = append(allow, u.Host)
	}
	return egress.Policy{Allow: allow}
}
