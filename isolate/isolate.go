package isolate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// Sentinel errors. Callers branch on them with errors.Is.
var (
	// ErrDead marks a sandbox that stopped working: its container exited
	// or was killed, or its agent stopped answering. A session can start
	// a new sandbox.
	ErrDead = errors.New("sandbox is dead")
	// ErrOOM marks a sandbox killed because it reached its memory limit.
	// Errors that wrap it wrap ErrDead too.
	ErrOOM = errors.New("sandbox ran out of memory")
	// ErrUnavailable marks a backend that cannot run here, such as
	// containerd without its daemon.
	ErrUnavailable = errors.New("sandbox backend unavailable")
)

// Defaults of Config.
const (
	DefaultMemoryMiB = 1024
	DefaultCPUs      = 1.0
	DefaultPids      = 1024
)

// DefaultSocket is where containerd's daemon listens by default.
const DefaultSocket = "/run/containerd/containerd.sock"

// A Sandbox is where one session's browser runs, cut off from the host and
// the network except through an egress proxy that enforces the session's
// policy. package isolate/containerd and isolate/local provide one.
type Sandbox interface {
	// Browser starts a fresh browser in the sandbox and connects to it.
	// cfg.Flags is not used: Config.Flags and the sandbox decide the
	// browser's flags. cfg.Exec is used only by backends that run a host
	// binary (local). ctx bounds the start only; the caller must close the
	// browser.
	Browser(ctx context.Context, cfg cdp.Config) (*cdp.Browser, error)
	// Health returns nil while the sandbox works. Otherwise it says why
	// not, in an error wrapping ErrDead (and ErrOOM after the memory limit
	// killed it), or, if ctx ended before it could tell, ctx's error.
	Health(ctx context.Context) error
	// Close stops the sandbox and removes everything it made. It runs to
	// the end even when ctx is canceled, and is idempotent.
	Close(ctx context.Context) error
}

// Config describes one session's sandbox. Each zero value is a documented
// default.
type Config struct {
	// Name identifies the session in logs and in the sandbox's id; empty
	// means a random name.
	Name string
	// Egress says which hosts the browser may reach. The zero Policy
	// allows none.
	Egress egress.Policy
	// OnDecision, if not nil, receives each egress decision (see
	// egress.Config.OnDecision).
	OnDecision func(egress.Decision)
	// MemoryMiB limits the memory of everything in the sandbox, tmpfs
	// files included; 0 means DefaultMemoryMiB. The local backend does not
	// enforce it.
	MemoryMiB uint64
	// CPUs limits CPU time, in CPUs; 0 means DefaultCPUs. The local
	// backend does not enforce it.
	CPUs float64
	// Pids limits processes and threads; 0 means DefaultPids. The local
	// backend does not enforce it.
	Pids int64
	// Flags are extra Chromium flags, such as "--lang=de".
	Flags []string
	// Logger receives the sandbox's diagnostics and egress decisions; nil
	// means slog.Default().
	Logger *slog.Logger
}

// reservedFlags are Chromium flags a sandbox sets itself: a session's
// Flags may not change where the browser's traffic goes or how it is
// driven.
var reservedFlags = []string{
	"proxy-server", "no-proxy-server", "proxy-bypass-list", "proxy-pac-url", "proxy-auto-detect",
	"remote-debugging-pipe", "remote-debugging-port", "remote-debugging-address", "remote-debugging-io-pipes",
	"user-data-dir", "force-webrtc-ip-handling-policy", "host-resolver-rules", "host-rules",
}

// Validate checks c's policy, limits and flags.
func (c Config) Validate() error {
	if err := c.Egress.Validate(); err != nil {
		return fmt.Errorf("egress: %w", err)
	}
	if c.CPUs < 0 || c.Pids < 0 {
		return fmt.Errorf("negative limit (%g CPUs, %d pids)", c.CPUs, c.Pids)
	}
	for _, f := range c.Flags {
		name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if slices.Contains(reservedFlags, strings.ToLower(name)) {
			return fmt.Errorf("flag %q: the sandbox sets --%s itself", f, name)
		}
	}
	return nil
}

// Backend names a kind of sandbox, as --isolate gives it.
type Backend string

// Backends.
const (
	Local      Backend = "local"      // a browser process on the host, for development
	Containerd Backend = "containerd" // one container per session
)

// Choose returns the backend that name asks for, or, for "" and "auto",
// containerd when its socket exists and local otherwise.
func Choose(name, socket string) (Backend, error) {
	switch Backend(name) {
	case Local, Containerd:
		return Backend(name), nil
	case "", "auto":
		if socket == "" {
			socket = DefaultSocket
		}
		if fi, err := os.Stat(socket); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return Containerd, nil
		}
		return Local, nil
	}
	return "", fmt.Errorf("isolate %q: want local, containerd or auto", name)
}

// Display is a cdp.Display whose browser runs in a sandbox. A Capture or
// Perform error that wraps screen.ErrGone also says, when the sandbox died,
// why it did ("sandbox spotter-x died: out of memory (limit 256 MiB)").
type Display struct {
	*cdp.Display
	browser *cdp.Browser
	sb      Sandbox
}

// Open starts a browser in sb and opens one display in it. ctx bounds the
// start only. Closing the display closes its browser, not the sandbox.
func Open(ctx context.Context, sb Sandbox, cfg cdp.Config) (*Display, error) {
	b, err := sb.Browser(ctx, cfg)
	if err != nil {
		return nil, explain(ctx, sb, err)
	}
	d, err := b.NewDisplay(ctx, cdp.DisplayConfig{})
	if err != nil {
		return nil, errors.Join(explain(ctx, sb, err), b.Close(ctx))
	}
	return &Display{Display: d, browser: b, sb: sb}, nil
}

// Capture is cdp.Display.Capture, with the sandbox's cause of death added to
// an error wrapping screen.ErrGone.
func (d *Display) Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	shot, err := d.Display.Capture(ctx, o)
	return shot, explain(ctx, d.sb, err)
}

// Perform is cdp.Display.Perform, with the sandbox's cause of death added
// to an error wrapping screen.ErrGone.
func (d *Display) Perform(ctx context.Context, m screen.Mapped) error {
	return explain(ctx, d.sb, d.Display.Perform(ctx, m))
}

// Close closes the display and its browser. The sandbox stays up. The
// browser goes first: it takes its tab with it, so nothing waits for the
// tab to close on its own.
func (d *Display) Close(ctx context.Context) error {
	berr := d.browser.Close(ctx)
	return errors.Join(d.Display.Close(ctx), berr)
}

// explainWait bounds how long explain waits for a sandbox to report its
// death after its display went away: the connection can drop a moment
// before the backend has learned why.
const explainWait = 2 * time.Second

// explain adds sb's cause of death to err when err says the display is gone.
func explain(ctx context.Context, sb Sandbox, err error) error {
	if err == nil || ctx.Err() != nil || !errors.Is(err, screen.ErrGone) && !errors.Is(err, context.Canceled) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), explainWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if herr := sb.Health(ctx); errors.Is(herr, ErrDead) {
			if !errors.Is(err, screen.ErrGone) {
				err = fmt.Errorf("%w: %w", screen.ErrGone, err)
			}
			return fmt.Errorf("%w (%w)", err, herr)
		}
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
	}
}
