package playwright

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

func TestRemoteConfig(t *testing.T) {
	got, err := Config{DriverDir: "/d", WSEndpoint: "ws://127.0.0.1:3000/x", Exec: "/opt/chromium"}.withDefaults()
	if err != nil {
		t.Fatalf("Config{WSEndpoint}.withDefaults() = %v", err)
	}
	if got.Exec != "" {
		t.Errorf("Config{WSEndpoint}.withDefaults().Exec = %q, want none: the server's browser runs, whatever Exec says", got.Exec)
	}
	for _, tt := range []struct {
		cfg  Config
		want string // in the error
	}{
		{Config{WSEndpoint: "http://grid:3000/"}, "ws://"},
		{Config{WSEndpoint: "ws:///path"}, "no host"},
		{Config{WSEndpoint: "http://user:secret@grid:3000/"}, "user:xxxxx@grid"},
		{Config{WSEndpoint: "ws://grid:3000/", Flags: []string{"--lang=de"}}, "no flags"},
		{Config{WSHeaders: map[string]string{"Authorization": "x"}}, "without a WebSocket endpoint"},
	} {
		tt.cfg.DriverDir = "/d"
		_, err := tt.cfg.withDefaults()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Config{WSEndpoint: %q, Exec: %q, Flags: %q}.withDefaults() = %v, want an error containing %q",
				tt.cfg.WSEndpoint, tt.cfg.Exec, tt.cfg.Flags, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("withDefaults() = %v, shows the endpoint's password", err)
		}
	}
}

// TestConnectedClose checks that closing a connected display leaves the
// server running, so that another client can use it.
func TestConnectedClose(t *testing.T) {
	srv := startServer(t)
	pages := pages(t)
	for i := range 2 {
		d := open(t, Config{WSEndpoint: srv.endpoint})
		shot := load(t, d, pages.URL+"/b")
		if shot.Frame.URL != pages.URL+"/b" {
			t.Errorf("connection %d: Frame.URL = %q, want %q", i, shot.Frame.URL, pages.URL+"/b")
		}
		if err := d.Close(t.Context()); err != nil {
			t.Errorf("connection %d: Close() = %v", i, err)
		}
		if err := d.Perform(t.Context(), screen.Mapped{Action: click(1, 1)}); !errors.Is(err, screen.ErrGone) {
			t.Errorf("connection %d: Perform(click) after Close = %v, want ErrGone", i, err)
		}
		if !srv.alive() {
			t.Fatalf("connection %d: the Playwright server exited when the display closed; stderr:\n%s", i, srv.stderr)
		}
	}
}

// TestConnectedServerGone checks that a display whose server stops fails
// with screen.ErrGone, saying the connection closed.
func TestConnectedServerGone(t *testing.T) {
	srv := startServer(t)
	d := open(t, Config{WSEndpoint: srv.endpoint})
	load(t, d, pages(t).URL+"/b")
	if err := srv.stop(); err != nil {
		t.Fatalf("stop the server: %v", err)
	}
	_, err := d.Capture(t.Context(), screen.CaptureOptions{})
	if !errors.Is(err, screen.ErrGone) || !strings.Contains(err.Error(), "connection to the playwright server closed") {
		t.Errorf("Capture() after the server stopped = %v, want ErrGone saying the connection closed", err)
	}
	if err := d.Perform(t.Context(), screen.Mapped{Action: click(1, 1)}); !errors.Is(err, screen.ErrGone) {
		t.Errorf("Perform(click) after the server stopped = %v, want ErrGone", err)
	}
}

// TestConnectRefused checks that an endpoint with no server fails Open
// with an error naming it.
func TestConnectRefused(t *testing.T) {
	integration(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "ws://" + ln.Addr().String() + "/nothing"
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	d, err := Open(ctx, testConfig(Config{WSEndpoint: endpoint}))
	if err == nil {
		d.Close(t.Context())
		t.Fatalf("Open(WSEndpoint: %s) with nothing listening = nil error", endpoint)
	}
	if !strings.Contains(err.Error(), "connect to playwright server "+endpoint) {
		t.Errorf("Open(WSEndpoint: %s) with nothing listening = %v, want an error naming the endpoint", endpoint, err)
	}
}

// TestConnectOtherVersion connects to a Playwright server of another
// version (playwright-core 1.50.1, which .ci/deps installs beside the
// driver): Open fails with a VersionError that names both versions, in
// one line, not with the server's boxed message or "unreachable".
func TestConnectOtherVersion(t *testing.T) {
	cfg, exe := serverConfig(t)
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(cache, "spotter", "playwright-1.50.1", "package")
	if _, err := os.Stat(filepath.Join(old, "cli.js")); err != nil {
		t.Fatalf("playwright-core 1.50.1: %v (.ci/deps installs it)", err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "launch-server.js"))
	if err != nil {
		t.Fatal(err)
	}
	srv := startNode(t, cfg.DriverDir, append([]string{script, old, exe}, chromiumFlags...), "")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	d, err := Open(ctx, testConfig(Config{WSEndpoint: srv.endpoint}))
	if err == nil {
		d.Close(t.Context())
		t.Fatal("Open() on a server of Playwright 1.50 = nil error")
	}
	var ve *VersionError
	if !errors.Is(err, ErrVersion) || !errors.As(err, &ve) || ve.Server != "1.50" || ve.Client != "1.52" {
		t.Fatalf("Open() on a server of Playwright 1.50 = %v, want a VersionError of server 1.50 and client 1.52", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "runs Playwright 1.50") || !strings.Contains(msg, "client is Playwright 1.52") {
		t.Errorf("Open() = %q, want one line naming both versions", msg)
	}
}

// TestRunServer connects to "playwright run-server", the server Playwright
// grids commonly run, which launches the browser the client's headers ask
// for: pages load, hit-tests work, and the server outlives the client.
func TestRunServer(t *testing.T) {
	srv := startRunServer(t)
	pages := pages(t)
	for i := range 2 {
		d := open(t, Config{WSEndpoint: srv.endpoint, WSHeaders: runServerHeaders(t)})
		shot := load(t, d, pages.URL+"/a")
		if shot.Frame.URL != pages.URL+"/a" || shot.Frame.Settle.TimedOut {
			t.Errorf("connection %d: Frame.URL %q, settle %+v; want %q, settled", i, shot.Frame.URL, shot.Frame.Settle, pages.URL+"/a")
		}
		got, err := d.HitTest(t.Context(), actions.Pt(100, 100))
		if err != nil || got.Tag != "a" || got.Href != pages.URL+"/b" {
			t.Errorf("connection %d: HitTest() on the link = %+v, %v; want the link to /b", i, got, err)
		}
		if err := d.Close(t.Context()); err != nil {
			t.Errorf("connection %d: Close() = %v", i, err)
		}
		if !srv.alive() {
			t.Fatalf("connection %d: the run-server exited when the display closed; stderr:\n%s", i, srv.stderr)
		}
	}
}
