package wiring

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/screen/playwright"
)

// A display spec is checked at load time, with words that say what to
// change.
func TestDisplaySpecCheck(t *testing.T) {
	tests := []struct {
		name string
		spec DisplaySpec
		want string // "" for a spec that passes
	}{
		{"default", DisplaySpec{}, ""},
		{"chromium", DisplaySpec{Backend: Chromium, Width: 1024, Height: 768, DPR: 2}, ""},
		{"vnc", DisplaySpec{Backend: VNC, Address: "127.0.0.1:5900", PasswordEnv: "VNC_PASSWORD"}, ""},
		{"vnc unix", DisplaySpec{Backend: VNC, Address: "unix:/run/vnc.sock"}, ""},
		{"desktop", DisplaySpec{Backend: Desktop, Command: []string{"xterm"}}, ""},
		{"desktop default command", DisplaySpec{Backend: Desktop}, ""},
		{"playwright", DisplaySpec{Backend: Playwright}, ""},
		{"playwright remote", DisplaySpec{Backend: Playwright, WSEndpoint: "ws://127.0.0.1:3000/abc"}, ""},
		{"unknown backend", DisplaySpec{Backend: "x11"}, `display.backend "x11": want one of chromium, vnc, desktop, playwright`},
		{"vnc without address", DisplaySpec{Backend: VNC}, "display.address is required for the vnc backend"},
		{"vnc bad address", DisplaySpec{Backend: VNC, Address: "localhost"}, "want host:port"},
		{"vnc relative socket", DisplaySpec{Backend: VNC, Address: "unix:vnc.sock"}, "must be absolute"},
		{"vnc password in the spec", DisplaySpec{Backend: VNC, Address: "h:1", PasswordEnv: "hunter 2"}, "not an environment variable's name"},
		{"vnc with a dpr", DisplaySpec{Backend: VNC, Address: "h:1", DPR: 2}, "no device pixel ratio"},
		{"desktop with an address", DisplaySpec{Backend: Desktop, Address: "h:1"}, "display.address is not used by the desktop backend"},
		{"desktop empty command", DisplaySpec{Backend: Desktop, Command: []string{" "}}, "program's name is empty"},
		{"chromium with a command", DisplaySpec{Command: []string{"xterm"}}, "display.command is not used by the chromium backend"},
		{"playwright bad endpoint", DisplaySpec{Backend: Playwright, WSEndpoint: "http://h/"}, "want a ws:// or wss:// address"},
		{"too small", DisplaySpec{Width: 100, Height: 100}, "outside 200x200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.spec
			d.Defaults()
			err := d.Check()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check(%+v) = %v, want nil", tt.spec, err)
			case tt.want != "" && (!errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Check(%+v) = %v, want ErrSpec saying %q", tt.spec, err, tt.want)
			}
		})
	}
}

func TestCheckStartURL(t *testing.T) {
	desk := DisplaySpec{Backend: Desktop}
	if err := desk.CheckStartURL("https://example.com/"); !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), "no browser") {
		t.Errorf("CheckStartURL(desktop, https) = %v, want ErrSpec saying there is no browser", err)
	}
	for _, u := range []string{"", "about:blank"} {
		if err := desk.CheckStartURL(u); err != nil {
			t.Errorf("CheckStartURL(desktop, %q) = %v, want nil", u, err)
		}
	}
	if err := (DisplaySpec{Backend: Playwright}).CheckStartURL("https://example.com/"); err != nil {
		t.Errorf("CheckStartURL(playwright, https) = %v, want nil", err)
	}
}

// OpenDisplay refuses a bad spec before it starts anything, and a
// password variable that is not set before it connects.
func TestOpenDisplayRefuses(t *testing.T) {
	tests := []struct {
		name string
		req  DisplayRequest
		want string
	}{
		{"unknown backend", DisplayRequest{Display: DisplaySpec{Backend: "rdp"}}, "display.backend"},
		{"desktop start url", DisplayRequest{Display: DisplaySpec{Backend: Desktop}, StartURL: "https://example.com/"}, "no browser"},
		{"unset password", DisplayRequest{Display: DisplaySpec{Backend: VNC, Address: "127.0.0.1:1", PasswordEnv: "SPOTTER_TEST_NO_SUCH_VAR"},
			Getenv: func(string) string { return "" }}, "SPOTTER_TEST_NO_SUCH_VAR, which is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := OpenDisplay(context.Background(), tt.req)
			if err == nil {
				d.Close(context.Background())
				t.Fatalf("OpenDisplay(%+v) = nil error, want one saying %q", tt.req.Display, tt.want)
			}
			if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("OpenDisplay(%+v) = %v, want ErrSpec saying %q", tt.req.Display, err, tt.want)
			}
		})
	}
}

func TestSandboxed(t *testing.T) {
	for _, tt := range []struct {
		d    DisplaySpec
		b    isolate.Backend
		want bool
	}{
		{DisplaySpec{}, isolate.Containerd, true},
		{DisplaySpec{Backend: Chromium}, isolate.Local, true},
		{DisplaySpec{Backend: Desktop}, isolate.Containerd, true},
		{DisplaySpec{Backend: Desktop}, isolate.Local, false},
		{DisplaySpec{Backend: VNC, Address: "h:1"}, isolate.Containerd, false},
		{DisplaySpec{Backend: Playwright}, isolate.Local, true},
		{DisplaySpec{Backend: Playwright, WSEndpoint: "ws://h/x"}, isolate.Local, false},
	} {
		if got := tt.d.Sandboxed(tt.b); got != tt.want {
			t.Errorf("%+v.Sandboxed(%s) = %v, want %v", tt.d, tt.b, got, tt.want)
		}
	}
}

// A Playwright server of another version is the spec's mistake, said with
// both versions (ErrSpec: serve answers 400 with it); a server that does
// not answer is ErrConnect.
func TestPlaywrightConnectErrors(t *testing.T) {
	ve := fmt.Errorf("connect to playwright server ws://grid:3000/x: %w", &playwright.VersionError{Server: "1.50", Client: "1.52"})
	err := connectError("ws://grid:3000/x", ve)
	if !errors.Is(err, ErrSpec) || errors.Is(err, ErrConnect) ||
		!strings.Contains(err.Error(), "display.ws_endpoint: the Playwright server runs Playwright 1.50 and Spotter's client is Playwright 1.52") {
		t.Errorf("connectError(version) = %v, want ErrSpec naming both versions", err)
	}
	err = connectError("ws://grid:3000/x", errors.New("dial tcp: connection refused"))
	if !errors.Is(err, ErrConnect) || errors.Is(err, ErrSpec) {
		t.Errorf("connectError(refused) = %v, want ErrConnect", err)
	}
}
