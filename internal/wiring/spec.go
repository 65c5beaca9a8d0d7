package wiring

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/screen"
)

// ErrSpec marks a task, session or job spec that cannot be run as written.
var ErrSpec = errors.New("invalid spec")

// ErrConnect marks a display the spec points at that did not answer: a
// VNC server at its address, a Playwright server at its ws_endpoint.
var ErrConnect = errors.New("display server unreachable")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSpec, fmt.Sprintf(format, args...))
}

// Display backends (DisplaySpec.Backend).
const (
	// Chromium is a headless Chromium over CDP (screen/cdp), on the host
	// or in a sandbox: the default.
	Chromium = "chromium"
	// VNC is an existing VNC server (screen/vnc) at DisplaySpec.Address.
	VNC = "vnc"
	// Desktop is a fresh Xvnc desktop (screen/vnc/desktop) running
	// DisplaySpec.Command, on the host or in a containerd sandbox.
	Desktop = "desktop"
	// Playwright is Chromium through playwright-go (screen/playwright),
	// launched here or reached at DisplaySpec.WSEndpoint.
	Playwright = "playwright"
)

// Backends lists the display backends a spec may name.
var Backends = []string{Chromium, VNC, Desktop, Playwright}

// DisplaySpec is the display of a task, a session, a batch job or an MCP
// server: which backend, its size, and where to find it. It is plain data
// and holds no secret: a VNC password is read from the environment
// variable PasswordEnv names.
type DisplaySpec struct {
	// Backend is chromium (the default), vnc, desktop or playwright.
	Backend string `yaml:"backend" json:"backend,omitempty"`
	// Width and Height are the screen's size: a browser's viewport in CSS
	// px, a desktop's screen, or the size a VNC server's screen must have.
	// Default 1280x800.
	Width  int `yaml:"width" json:"width,omitempty"`
	Height int `yaml:"height" json:"height,omitempty"`
	// DPR is a browser's device pixel ratio; default 1. Desktops and VNC
	// servers have none but 1.
	DPR float64 `yaml:"dpr" json:"dpr,omitempty"`
	// Address is a vnc display's server: host:port, or unix:/path/to/socket.
	Address string `yaml:"address" json:"address,omitempty"`
	// PasswordEnv names the environment variable that holds a vnc
	// display's password; empty means the server asks for none.
	PasswordEnv string `yaml:"password_env" json:"password_env,omitempty"`
	// Command is what a desktop runs once it is up, as argv (such as
	// ["xterm"]); empty means an xterm.
	Command []string `yaml:"command" json:"command,omitempty"`
	// WSEndpoint is a Playwright browser server's websocket address
	// (ws:// or wss://, as BrowserType.launchServer prints it); empty
	// means a Chromium launched through playwright-go.
	WSEndpoint string `yaml:"ws_endpoint" json:"ws_endpoint,omitempty"`
}

// Size returns the screen size.
func (d DisplaySpec) Size() screen.Size { return screen.Size{W: d.Width, H: d.Height} }

// Browser reports whether the display is a browser, which has a URL, tabs,
// dialogs and a DOM to inspect; a desktop or a VNC server has none of them.
func (d DisplaySpec) Browser() bool {
	return d.Backend == "" || d.Backend == Chromium || d.Backend == Playwright
}

// Sandboxed reports whether OpenDisplay runs the display in a sandbox of
// Sandboxes of backend b: Chromium always, Playwright behind the local
// proxy (unless it connects to a server), a desktop only in containerd, and
// a VNC server, which runs elsewhere, never.
func (d DisplaySpec) Sandboxed(b isolate.Backend) bool {
	switch d.Backend {
	case "", Chromium:
		return true
	case Playwright:
		return d.WSEndpoint == "" && b == isolate.Local
	case Desktop:
		return b == isolate.Containerd
	}
	return false
}

// Defaults fills in the defaults: chromium, 1280x800 at DPR 1.
func (d *DisplaySpec) Defaults() {
	if d.Backend == "" {
		d.Backend = Chromium
	}
	if d.Width == 0 && d.Height == 0 {
		d.Width, d.Height = 1280, 800
	}
	if d.DPR == 0 {
		d.DPR = 1
	}
}

// envName is what an environment variable's name may be.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Check reports what is wrong with a spec whose defaults are filled in,
// in words for the person who wrote it; its errors wrap ErrSpec.
func (d DisplaySpec) Check() error {
	switch {
	case d.Width < 200 || d.Height < 200 || d.Width > 3840 || d.Height > 2160:
		return bad("display %dx%d is outside 200x200..3840x2160", d.Width, d.Height)
	case d.DPR < 0.5 || d.DPR > 4:
		return bad("display dpr %g is outside 0.5..4", d.DPR)
	}
	unused := func(field string, set bool) error {
		if set {
			return bad("display.%s is not used by the %s backend", field, d.Backend)
		}
		return nil
	}
	var errs []error
	switch d.Backend {
	case Chromium:
		errs = append(errs, unused("address", d.Address != ""), unused("password_env", d.PasswordEnv != ""),
			unused("command", len(d.Command) > 0), unused("ws_endpoint", d.WSEndpoint != ""))
	case VNC:
		errs = append(errs, checkVNCAddress(d.Address), unused("command", len(d.Command) > 0),
			unused("ws_endpoint", d.WSEndpoint != ""))
		if d.PasswordEnv != "" && !envName.MatchString(d.PasswordEnv) {
			errs = append(errs, bad("display.password_env %q is not an environment variable's name (the password itself never goes in a spec)", d.PasswordEnv))
		}
	case Desktop:
		errs = append(errs, unused("address", d.Address != ""), unused("password_env", d.PasswordEnv != ""),
			unused("ws_endpoint", d.WSEndpoint != ""))
		if len(d.Command) > 0 && strings.TrimSpace(d.Command[0]) == "" {
			errs = append(errs, bad("display.command: the program's name is empty"))
		}
	case Playwright:
		errs = append(errs, unused("address", d.Address != ""), unused("password_env", d.PasswordEnv != ""),
			unused("command", len(d.Command) > 0))
		if d.WSEndpoint != "" {
			u, err := url.Parse(d.WSEndpoint)
			if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
				errs = append(errs, bad("display.ws_endpoint %q: want a ws:// or wss:// address", d.WSEndpoint))
			}
		}
	default:
		return bad("display.backend %q: want one of %s", d.Backend, strings.Join(Backends, ", "))
	}
	if !d.Browser() && d.DPR != 1 {
		errs = append(errs, bad("display.dpr %g: a %s display has no device pixel ratio but 1", d.DPR, d.Backend))
	}
	return errors.Join(errs...)
}

// CheckStartURL says whether a display can open startURL: only browsers
// can; a desktop or a VNC server takes about:blank (or nothing) only.
func (d DisplaySpec) CheckStartURL(startURL string) error {
	if d.Browser() || startURL == "" || startURL == "about:blank" {
		return nil
	}
	return bad("start_url %q: a %s display has no browser to open it (start a browser with display.command, or leave start_url out)",
		startURL, d.Backend)
}

func checkVNCAddress(addr string) error {
	if addr == "" {
		return bad("display.address is required for the vnc backend (host:port, or unix:/path)")
	}
	if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		if !strings.HasPrefix(p, "/") {
			return bad("display.address %q: a unix socket's path must be absolute", addr)
		}
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" {
		return bad("display.address %q: want host:port (such as 127.0.0.1:5900) or unix:/path", addr)
	}
	return nil
}

// vncNetwork splits a vnc display's address into a network and an address.
func vncNetwork(addr string) (network, address string) {
	if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		return "unix", p
	}
	return "tcp", addr
}
