package wiring

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"image/png"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/containerd"
	"github.com/spotter-harness/spotter/isolate/local"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/playwright"
	"github.com/spotter-harness/spotter/screen/vnc"
	"github.com/spotter-harness/spotter/screen/vnc/desktop"
)

// starter returns how req's display is started: the one switch over
// display backends.
func starter(req DisplayRequest) (func(context.Context, DisplayRequest) (inner, isolate.Sandbox, error), error) {
	switch req.Display.Backend {
	case Chromium:
		return startChromium, nil
	case VNC:
		return startVNC, nil
	case Desktop:
		return startDesktop, nil
	case Playwright:
		if req.Sandboxes != nil && req.Sandboxes.Backend() == isolate.Containerd && req.Display.WSEndpoint == "" &&
			!req.Sandboxes.fallsBack(req.Display) {
			return nil, bad("display.backend playwright runs its browser on the host, not in a containerd sandbox: " +
				"use --isolate auto, local or none, or a remote browser server (display.ws_endpoint)")
		}
		return startPlaywright, nil
	}
	return nil, bad("display.backend %q: want one of %v", req.Display.Backend, Backends)
}

// startVNC connects to an existing VNC server, whose screen must have the
// spec's size: the model's screenshots, and its coordinates, are sized
// from the spec before the display is open.
func startVNC(ctx context.Context, req DisplayRequest) (inner, isolate.Sandbox, error) {
	d, err := dialVNC(ctx, req.Display, req.Getenv)
	if err != nil {
		return nil, nil, err
	}
	v := &vncDisplay{d: d}
	if err := v.checkSize(ctx, req.Display.Size()); err != nil {
		return nil, nil, errors.Join(err, v.Close(ctx))
	}
	return v, nil, nil
}

// dialVNC connects to the VNC server of vnc display spec d, with the
// password of the environment variable it names.
func dialVNC(ctx context.Context, d DisplaySpec, getenv func(string) string) (*vnc.Display, error) {
	var password string
	if d.PasswordEnv != "" {
		if getenv != nil {
			password = getenv(d.PasswordEnv)
		}
		if password == "" {
			return nil, bad("display.password_env names %s, which is not set or empty", d.PasswordEnv)
		}
	}
	network, addr := vncNetwork(d.Address)
	v, err := vnc.Dial(ctx, network, addr, vnc.Config{Password: password})
	if err != nil {
		return nil, fmt.Errorf("connect to the VNC server at %s: %w (%w)", d.Address, ErrConnect, err)
	}
	return v, nil
}

// VNCScreenSize connects to the server of vnc display spec d and returns
// the size of its screen, for a caller that runs at the server's own size
// (`spotter test`'s vnc: tests that give none); OpenDisplay then checks
// the spec's size against the screen.
func VNCScreenSize(ctx context.Context, d DisplaySpec, getenv func(string) string) (screen.Size, error) {
	v, err := dialVNC(ctx, d, getenv)
	if err != nil {
		return screen.Size{}, err
	}
	defer v.Close()
	return v.Size(), nil
}

// startDesktop starts a fresh desktop: in a containerd sandbox of
// req.Sandboxes when there is one, on the host otherwise.
func startDesktop(ctx context.Context, req DisplayRequest) (inner, isolate.Sandbox, error) {
	size := req.Display.Size()
	if req.Sandboxes != nil && req.Sandboxes.Backend() == isolate.Containerd {
		sc := req.Sandbox
		sc.Egress, sc.OnDecision = req.Egress, req.OnDecision
		sb, err := req.Sandboxes.Start(ctx, sc)
		if err != nil {
			return nil, nil, err
		}
		csb, ok := sb.(*containerd.Sandbox)
		if !ok {
			return nil, nil, errors.Join(fmt.Errorf("a containerd sandbox of type %T", sb), sb.Close(context.WithoutCancel(ctx)))
		}
		d, err := csb.Desktop(ctx, size, req.Display.Command, vnc.Config{})
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("start a desktop in the sandbox: %w", err), sb.Close(context.WithoutCancel(ctx)))
		}
		v := &vncDisplay{d: d}
		if err := v.waitDrawn(ctx); err != nil {
			return nil, nil, errors.Join(err, v.Close(ctx), sb.Close(context.WithoutCancel(ctx)))
		}
		return v, sb, nil
	}
	app := desktop.XTerm()
	if len(req.Display.Command) > 0 {
		app = desktop.App{Argv: req.Display.Command}
	}
	dt, err := desktop.Start(ctx, desktop.Config{Size: size, Apps: []desktop.App{app}, Logger: req.Logger})
	if err != nil {
		return nil, nil, fmt.Errorf("start a desktop: %w", err)
	}
	d, err := dt.Dial(ctx, vnc.Config{})
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("connect to the desktop: %w", err), dt.Close())
	}
	v := &vncDisplay{d: d, desk: dt}
	// The first input must reach the command's window: wait for it to
	// have the focus, and for the framebuffer to show it.
	if err := dt.WaitActive(ctx, drawnWait); err != nil {
		return nil, nil, errors.Join(err, v.Close(ctx))
	}
	if err := v.waitDrawn(ctx); err != nil {
		return nil, nil, errors.Join(err, v.Close(ctx))
	}
	return v, nil, nil
}

// startPlaywright launches Chromium through playwright-go, or connects to
// a Playwright browser server. A launched browser goes through the local
// egress proxy when req asks for one (HostEgress, or local Sandboxes).
func startPlaywright(ctx context.Context, req DisplayRequest) (inner, isolate.Sandbox, error) {
	cfg := playwright.Config{Viewport: req.Display.Size(), DPR: req.Display.DPR, Exec: req.Browser,
		WSEndpoint: req.Display.WSEndpoint, Logger: req.Logger}
	var sb *local.Sandbox
	if cfg.WSEndpoint == "" && (req.HostEgress != nil || req.Sandboxes != nil) {
		sc := req.Sandbox
		sc.Egress, sc.OnDecision = req.Egress, req.OnDecision
		if req.Sandboxes == nil {
			sc.Egress = *req.HostEgress
		}
		sc.Logger = cmp.Or(sc.Logger, req.Logger)
		var err error
		if sb, err = startLocal(ctx, sc); err != nil {
			return nil, nil, err
		}
		cfg.Flags = append(cfg.Flags, "--proxy-server=http://"+sb.ProxyAddr(), "--proxy-bypass-list=<-loopback>",
			"--force-webrtc-ip-handling-policy=disable_non_proxied_udp")
	}
	d, err := playwright.Open(ctx, cfg)
	if err != nil {
		if cfg.WSEndpoint != "" {
			return nil, nil, connectError(cfg.WSEndpoint, err)
		}
		err = fmt.Errorf("open a Playwright browser: %w", err)
		if sb != nil {
			return nil, nil, errors.Join(err, sb.Close(context.WithoutCancel(ctx)))
		}
		return nil, nil, err
	}
	if sb != nil {
		return d, sb, nil
	}
	return d, nil, nil
}

// connectError says why the Playwright server at endpoint took no
// connection: a server of another version is the spec's mistake, said
// with both versions (ErrSpec); anything else is a server that did not
// answer (ErrConnect).
func connectError(endpoint string, err error) error {
	var ve *playwright.VersionError
	if errors.As(err, &ve) {
		return fmt.Errorf("%w: display.ws_endpoint: %v", ErrSpec, ve)
	}
	return fmt.Errorf("connect to the Playwright server at %s: %w (%w)", endpoint, ErrConnect, err)
}

// vncDisplay is a VNC connection, and the desktop it stops when it is
// closed (if it started one). It says what a desktop cannot do in words a
// model can act on.
type vncDisplay struct {
	d    *vnc.Display
	desk *desktop.Desktop // nil unless the desktop is on the host
}

func (v *vncDisplay) Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	return v.d.Capture(ctx, o)
}

func (v *vncDisplay) Perform(ctx context.Context, m screen.Mapped) error {
	err := v.d.Perform(ctx, m)
	if errors.Is(err, screen.ErrUnsupported) && m.Action.Kind == actions.Upload {
		return fmt.Errorf("%w (this display is a VNC desktop: its apps open file dialogs of their own, on the desktop's "+
			"own file system, which the files this session makes available are not on; choose a file the desktop has "+
			"in its dialog with the mouse and keyboard)", err)
	}
	if errors.Is(err, screen.ErrUnsupported) {
		return fmt.Errorf("%w (this display is a VNC desktop, not a browser: it has no URL, tabs, history, dialogs "+
			"or file chooser of its own, and Spotter cannot see its elements; act with the mouse and keyboard)", err)
	}
	return err
}

// drawnWait bounds how long a fresh desktop is given to show its
// command's first window before it is handed over as it is (a command may
// open no window at all).
const drawnWait = 10 * time.Second

// waitDrawn waits until the screen shows something besides the empty
// desktop (its command's first window), so that the model's first
// screenshot shows it and its first input reaches it. It watches the live
// framebuffer, which costs no round trip to the server.
func (v *vncDisplay) waitDrawn(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, drawnWait)
	defer cancel()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		shot, err := v.d.Capture(wctx, screen.CaptureOptions{Size: screen.Size{W: 64, H: 40}, Format: screen.PNG})
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("wait for the desktop's first window: %w", context.Cause(ctx))
		case wctx.Err() != nil:
			return nil // nothing drawn: hand it over as it is
		case err != nil:
			return fmt.Errorf("wait for the desktop's first window: %w", err)
		case !uniform(shot.Data):
			return nil
		}
		select {
		case <-wctx.Done():
		case <-tick.C:
		}
	}
}

// uniform reports whether a PNG is of one colour (or cannot be read).
func uniform(data []byte) bool {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return true
	}
	b := img.Bounds()
	first := img.At(b.Min.X, b.Min.Y)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if img.At(x, y) != first {
				return false
			}
		}
	}
	return true
}

// checkSize fails when the server's screen is not want.
func (v *vncDisplay) checkSize(ctx context.Context, want screen.Size) error {
	shot, err := v.d.Capture(ctx, screen.CaptureOptions{Size: screen.Size{W: 16, H: 10}})
	if err != nil {
		return fmt.Errorf("first screenshot of the VNC server: %w", err)
	}
	got := shot.Frame.Viewport
	if got != want {
		return bad("the VNC server's screen is %dx%d, but the display is %dx%d: set display.width and display.height to %d and %d",
			got.W, got.H, want.W, want.H, got.W, got.H)
	}
	return nil
}

// Close closes the connection and stops the desktop, if it started one.
func (v *vncDisplay) Close(context.Context) error {
	err := v.d.Close()
	if v.desk != nil {
		err = errors.Join(err, v.desk.Close())
	}
	return err
}
