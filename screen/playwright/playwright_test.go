package playwright

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/screen"
)

// The harness's Display interface, restated here so that this package
// does not import the loop.
var _ interface {
	Capture(context.Context, screen.CaptureOptions) (screen.Shot, error)
	Perform(context.Context, screen.Mapped) error
} = (*Display)(nil)

// One browser per test binary; a new display per test.
var (
	browserOnce sync.Once
	browser     *Browser
	browserErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if browser != nil {
		if err := browser.Close(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "closing the test browser:", err)
		}
	}
	os.Exit(code)
}

// integration skips t unless SPOTTER_INTEGRATION=1. With it set, a missing
// driver or Chromium fails the test.
func integration(t testing.TB) {
	t.Helper()
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run against a real Chromium")
	}
}

// testLogger discards the driver's diagnostics unless -v is given.
func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testConfig is cfg with the driver directory that
// $SPOTTER_PLAYWRIGHT_DRIVER names (the default one if unset).
func testConfig(cfg Config) Config {
	cfg.DriverDir = os.Getenv("SPOTTER_PLAYWRIGHT_DRIVER")
	cfg.Logger = testLogger()
	return cfg
}

// testBrowser returns the shared browser of the test binary.
func testBrowser(t testing.TB) *Browser {
	t.Helper()
	integration(t)
	browserOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		browser, browserErr = Launch(ctx, testConfig(Config{}))
	})
	if browserErr != nil {
		t.Fatalf("Launch() = %v", browserErr)
	}
	return browser
}

// newDisplay opens a display in the shared browser, closed when t ends.
func newDisplay(t testing.TB, cfg DisplayConfig) *Display {
	t.Helper()
	d, err := testBrowser(t).NewDisplay(t.Context(), cfg)
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

// open opens a display with a browser of its own, closed when t ends.
func open(t testing.TB, cfg Config) *Display {
	t.Helper()
	integration(t)
	cfg = testConfig(cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	d, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open(%+v) = %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := d.Close(context.Background()); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return d
}
