// Package isolatetest helps test sandboxes: it gates integration tests on
// SPOTTER_INTEGRATION=1 and containerd's daemon, and [Run] is the
// conformance suite that every isolate.Sandbox backend passes.
package isolatetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/png" // Capture's PNG screenshots
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// Integration skips t unless SPOTTER_INTEGRATION=1.
func Integration(t testing.TB) {
	t.Helper()
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run against real sandboxes")
	}
}

// Socket returns containerd's socket for an integration test. Without
// SPOTTER_INTEGRATION=1 it skips t; with it, a missing daemon fails t
// (start one with .ci/containerd).
func Socket(t testing.TB) string {
	t.Helper()
	Integration(t)
	socket := os.Getenv("SPOTTER_CONTAINERD_SOCKET")
	if socket == "" {
		socket = isolate.DefaultSocket
	}
	fi, err := os.Stat(socket)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("containerd socket %s: %v (SPOTTER_INTEGRATION=1 needs containerd's daemon: run .ci/containerd)", socket, err)
	}
	return socket
}

// Logger returns a logger for sandboxes under test: to stderr with -v,
// else nowhere.
func Logger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

// Decisions records egress decisions; its Record method is an
// isolate.Config.OnDecision.
type Decisions struct {
	mu  sync.Mutex
	all []egress.Decision
}

// Record adds d.
func (r *Decisions) Record(d egress.Decision) {
	r.mu.Lock()
	r.all = append(r.all, d)
	r.mu.Unlock()
}

// For returns the decisions about host:port so far.
func (r *Decisions) For(hostPort string) []egress.Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []egress.Decision
	for _, d := range r.all {
		if net.JoinHostPort(d.Host, d.Port) == hostPort {
			out = append(out, d)
		}
	}
	return out
}

// Page is a test page on the host's loopback: a full-viewport box of one
// colour, which turns green when clicked.
type Page struct {
	*httptest.Server
	Hits atomic.Int64
}

// Colours of a Page.
var (
	Blue  = [3]uint8{0x20, 0x40, 0xe0}
	Green = [3]uint8{0x10, 0xc0, 0x30}
	Red   = [3]uint8{0xe0, 0x20, 0x20}
)

// NewPage serves a Page of colour c until t ends.
func NewPage(t testing.TB, c [3]uint8) *Page {
	t.Helper()
	p := &Page{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.Hits.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><body style="margin:0">
<div id="box" style="width:100vw;height:100vh;background:rgb(%d,%d,%d)"
 onclick="this.style.background='rgb(%d,%d,%d)'"></div></body></html>`,
			c[0], c[1], c[2], Green[0], Green[1], Green[2])
	}))
	t.Cleanup(p.Close)
	return p
}

// HostPort returns the page's "127.0.0.1:port", as an allowlist names it.
func (p *Page) HostPort() string { return p.Listener.Addr().String() }

// Visit navigates d to url, optionally clicks the middle of the viewport,
// and returns the colour at the middle of a fresh screenshot. A failed
// navigation is not an error: the screenshot shows what the browser shows.
func Visit(ctx context.Context, d interface {
	Capture(context.Context, screen.CaptureOptions) (screen.Shot, error)
	Perform(context.Context, screen.Mapped) error
}, url string, click bool) ([3]uint8, error) {
	nav := d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: url}})
	if nav != nil && errors.Is(nav, screen.ErrGone) {
		return [3]uint8{}, nav
	}
	shot, err := d.Capture(ctx, screen.CaptureOptions{Format: screen.PNG})
	if err != nil {
		return [3]uint8{}, err
	}
	if click {
		mid := actions.Pt(float64(shot.Frame.Viewport.W)/2, float64(shot.Frame.Viewport.H)/2)
		if err := d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Click, At: mid, HasAt: true}}); err != nil {
			return [3]uint8{}, err
		}
		if shot, err = d.Capture(ctx, screen.CaptureOptions{Format: screen.PNG}); err != nil {
			return [3]uint8{}, err
		}
	}
	return centre(shot.Data)
}

// centre returns the colour at the middle of a PNG or JPEG screenshot.
func centre(data []byte) ([3]uint8, error) {
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return [3]uint8{}, fmt.Errorf("decode screenshot: %w", err)
	}
	b := img.Bounds()
	r, g, bl, _ := img.At(b.Min.X+b.Dx()/2, b.Min.Y+b.Dy()/2).RGBA()
	return [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8)}, nil
}

// Centre returns the colour at the middle of a PNG screenshot, failing t
// if it does not decode.
func Centre(t testing.TB, data []byte) [3]uint8 {
	t.Helper()
	c, err := centre(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Near reports whether two colours are within a small tolerance.
func Near(a, b [3]uint8) bool {
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < -12 || d > 12 {
			return false
		}
	}
	return true
}

// Run is the conformance suite of isolate.Sandbox backends. start must
// start a sandbox for cfg (failing t if it cannot); Run closes it.
func Run(t *testing.T, start func(t *testing.T, cfg isolate.Config) isolate.Sandbox) {
	Integration(t)
	allowed := NewPage(t, Blue)
	refused := NewPage(t, Red)
	tlsRefused := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsRefused.Close()
	var dec Decisions
	sb := start(t, isolate.Config{
		Name:       "conformance",
		Egress:     egress.Policy{Allow: []string{allowed.HostPort()}},
		OnDecision: dec.Record,
		Logger:     Logger(),
	})
	closed := false
	defer func() {
		if !closed {
			sb.Close(context.Background())
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := sb.Health(ctx); err != nil {
		t.Fatalf("Health() of a new sandbox = %v", err)
	}
	d, err := isolate.Open(ctx, sb, cdp.Config{Viewport: screen.Size{W: 640, H: 400}, Logger: Logger()})
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	defer d.Close(context.Background())

	t.Run("allowed host loads and clicks", func(t *testing.T) {
		got, err := Visit(ctx, d, allowed.URL+"/allowed", true)
		if err != nil {
			t.Fatalf("Visit(%s) = %v", allowed.URL, err)
		}
		if !Near(got, Green) {
			t.Errorf("Visit(%s) and click: middle pixel %v, want green %v", allowed.URL, got, Green)
		}
		ds := dec.For(allowed.HostPort())
		if len(ds) == 0 || !ds[0].Allowed {
			t.Errorf("egress decisions for %s = %+v, want it allowed", allowed.HostPort(), ds)
		}
	})
	t.Run("refused host gets the refusal page", func(t *testing.T) {
		got, err := Visit(ctx, d, refused.URL+"/refused", false)
		if err != nil {
			t.Fatalf("Visit(%s) = %v", refused.URL, err)
		}
		if Near(got, Red) {
			t.Errorf("Visit(%s): middle pixel %v is the refused page's red", refused.URL, got)
		}
		if n := refused.Hits.Load(); n != 0 {
			t.Errorf("refused server was hit %d times, want 0", n)
		}
		ds := dec.For(refused.HostPort())
		want := "is not in this session's allowlist"
		if len(ds) == 0 || ds[0].Allowed || !strings.Contains(ds[0].Reason, want) {
			t.Errorf("egress decisions for %s = %+v, want a refusal containing %q", refused.HostPort(), ds, want)
		}
	})
	t.Run("refused HTTPS host", func(t *testing.T) {
		hp := tlsRefused.Listener.Addr().String()
		if _, err := Visit(ctx, d, tlsRefused.URL, false); err != nil {
			t.Fatalf("Visit(%s) = %v", tlsRefused.URL, err)
		}
		ds := dec.For(hp)
		if len(ds) == 0 || ds[0].Allowed || ds[0].Method != "CONNECT" {
			t.Errorf("egress decisions for %s = %+v, want a refused CONNECT", hp, ds)
		}
	})
	t.Run("close", func(t *testing.T) {
		if err := d.Close(context.Background()); err != nil {
			t.Errorf("Display.Close() = %v", err)
		}
		closed = true
		if err := sb.Close(context.Background()); err != nil {
			t.Errorf("Close() = %v", err)
		}
		if err := sb.Close(context.Background()); err != nil {
			t.Errorf("second Close() = %v, want nil", err)
		}
		if err := sb.Health(context.Background()); !errors.Is(err, isolate.ErrDead) {
			t.Errorf("Health() after Close = %v, want ErrDead", err)
		}
	})
}

// BrowserChildren returns the process ids of this process's children that
// are Chromium: the browsers it launched and that still run. Count the
// browsers a step starts as the ids after it that were not there before
// (NewBrowsers): a browser of an earlier test may exit meanwhile.
func BrowserChildren(t testing.TB) map[int]bool {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	self, pids := strconv.Itoa(os.Getpid()), map[int]bool{}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid ...
		s := string(b)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		fields := strings.Fields(s[closing+1:])
		if len(fields) > 1 && fields[1] == self && strings.HasPrefix(s[open+1:closing], "chromium") {
			if pid, err := strconv.Atoi(strings.TrimSpace(s[:open])); err == nil {
				pids[pid] = true
			}
		}
	}
	return pids
}

// NewBrowsers returns how many of this process's Chromium children run now
// that were not in before (BrowserChildren).
func NewBrowsers(t testing.TB, before map[int]bool) int {
	t.Helper()
	return len(NewBrowserPIDs(t, before))
}

// NewBrowserPIDs returns the process ids of this process's Chromium
// children that run now and were not in before (BrowserChildren).
func NewBrowserPIDs(t testing.TB, before map[int]bool) []int {
	t.Helper()
	var pids []int
	for pid := range BrowserChildren(t) {
		if !before[pid] {
			pids = append(pids, pid)
		}
	}
	return pids
}
