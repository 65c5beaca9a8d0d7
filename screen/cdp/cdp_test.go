package cdp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg"
	_ "image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// The harness's Display interface, restated here so that this package
// does not import the loop.
var _ interface {
	Capture(context.Context, screen.CaptureOptions) (screen.Shot, error)
	Perform(context.Context, screen.Mapped) error
} = (*Display)(nil)

// One browser and one test server per test binary; a new display per test.
var (
	browserOnce sync.Once
	browser     *Browser
	browserErr  error

	serverOnce sync.Once
	server     *httptest.Server
)

func TestMain(m *testing.M) {
	code := m.Run()
	if browser != nil {
		if err := browser.Close(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "closing the test browser:", err)
		}
	}
	if server != nil {
		server.Close()
	}
	os.Exit(code)
}

// integration skips t unless SPOTTER_INTEGRATION=1. With it set, a missing
// Chromium fails the test.
func integration(t testing.TB) {
	t.Helper()
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run against a real Chromium")
	}
}

// testMode is the display mode the integration tests run in: the
// environment variable SPOTTER_CDP_MODE ("screencast", "frame-control";
// unset or "auto": the default). A FrameControl run needs
// chromium-headless-shell and fails without it.
func testMode(t testing.TB) Mode {
	t.Helper()
	m, err := ParseMode(os.Getenv("SPOTTER_CDP_MODE"))
	if err != nil {
		t.Fatalf("SPOTTER_CDP_MODE: %v", err)
	}
	return m
}

// testLogger discards chromedp's diagnostics unless -v is given.
func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testBrowser returns the shared browser of the test binary.
func testBrowser(t testing.TB) *Browser {
	t.Helper()
	integration(t)
	mode := testMode(t)
	browserOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		browser, browserErr = Launch(ctx, Config{Logger: testLogger(), Mode: mode})
		if browserErr == nil {
			t.Logf("test browser: %s in %v mode", browser.path, browser.Mode())
		}
	})
	if browserErr != nil {
		t.Fatalf("Launch() = %v", browserErr)
	}
	return browser
}

// newDisplay opens a display in the shared browser, closed when t ends.
func newDisplay(t testing.TB, cfg DisplayConfig) *Display {
	t.Helper()
	b := testBrowser(t)
	d, err := b.NewDisplay(t.Context(), cfg)
	if err != nil {
		t.Fatalf("NewDisplay(%+v) = %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := d.Close(context.Background()); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return d
}

// testURL returns the URL of a page of testdata on the shared test server.
// Besides the files, the server answers /slow after 300 ms (/slow?ms=120:
// after 120 ms).
func testURL(t testing.TB, path string) string {
	t.Helper()
	serverOnce.Do(func() {
		mux := http.NewServeMux()
		mux.Handle("/", http.FileServer(http.Dir("testdata")))
		// Third-party libraries, installed by install-weblibs.sh.
		mux.Handle("/lib/", http.StripPrefix("/lib/", http.FileServer(http.Dir(webLibsDir()))))
		mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
			wait := 300 * time.Millisecond
			if ms, err := strconv.Atoi(r.URL.Query().Get("ms")); err == nil && ms >= 0 && ms <= 5000 {
				wait = time.Duration(ms) * time.Millisecond
			}
			select {
			case <-time.After(wait):
			case <-r.Context().Done():
				return
			}
			w.Header().Set("Cache-Control", "no-store")
			fmt.Fprint(w, "ok")
		})
		// /download?name=x.txt&n=100 answers n bytes as an attachment.
		mux.HandleFunc("/download", func(w http.ResponseWriter, r *http.Request) {
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", r.URL.Query().Get("name")))
			w.Header().Set("Content-Length", strconv.Itoa(n))
			w.Write(bytes.Repeat([]byte("x"), n))
		})
		server = httptest.NewServer(mux)
	})
	return server.URL + "/" + path
}

// webLibsDir is where install-weblibs.sh puts the third-party libraries
// the tests' pages load.
func webLibsDir() string {
	if d := os.Getenv("SPOTTER_WEBLIBS"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "weblibs" // not there: the test that needs it says so
	}
	return filepath.Join(d, "spotter", "weblibs")
}

// do performs a, failing t on an error.
func do(t testing.TB, d *Display, a actions.Action) {
	t.Helper()
	if err := d.Perform(t.Context(), screen.Mapped{Action: a}); err != nil {
		t.Fatalf("Perform(%v) = %v", a.LogValue(), err)
	}
}

// load navigates d to a testdata page and waits until it has settled.
func load(t testing.TB, d *Display, path string) {
	t.Helper()
	do(t, d, actions.Action{Kind: actions.Navigate, URL: testURL(t, path)})
	shot, err := d.Capture(t.Context(), screen.CaptureOptions{Size: screen.Size{W: 64, H: 40}})
	if err != nil {
		t.Fatalf("Capture() after loading %s = %v", path, err)
	}
	if shot.Frame.Settle.TimedOut {
		t.Fatalf("loading %s did not settle: %s", path, shot.Frame.Settle.Reason)
	}
}

// eval evaluates a JavaScript expression in the page and decodes its JSON
// value into a T.
func eval[T any](t testing.TB, d *Display, expr string) T {
	t.Helper()
	var v T
	res, err := cdp.Call(t.Context(), d.t, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    expr,
		ReturnByValue: new(true),
		AwaitPromise:  new(true),
	})
	if err != nil {
		t.Fatalf("evaluate %q: %v", expr, err)
	}
	if res.ExceptionDetails != nil {
		t.Fatalf("evaluate %q: %s", expr, res.ExceptionDetails.Text)
	}
	if err := json.Unmarshal(res.Result.Value, &v); err != nil {
		t.Fatalf("evaluate %q: decode %s: %v", expr, res.Result.Value, err)
	}
	return v
}

// decode decodes a shot's image.
func decode(t testing.TB, shot screen.Shot) image.Image {
	t.Helper()
	img, format, err := image.Decode(bytes.NewReader(shot.Data))
	if err != nil {
		t.Fatalf("decode %s image: %v", shot.Frame.Format, err)
	}
	if format != string(shot.Frame.Format) {
		t.Errorf("image format = %s, want %s", format, shot.Frame.Format)
	}
	return img
}

// near reports whether c is within tol of want in each channel.
func near(c color.Color, want color.RGBA, tol int) bool {
	r, g, b, _ := c.RGBA()
	d := func(a uint32, b uint8) int { return abs(int(a>>8) - int(b)) }
	return d(r, want.R) <= tol && d(g, want.G) <= tol && d(b, want.B) <= tol
}

func rgb(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("rgb(%d,%d,%d)", r>>8, g>>8, b>>8)
}
