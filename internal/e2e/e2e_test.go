// Package e2e holds end-to-end tests: the harness loop driving a real
// Chromium, with pages that report what actually happened. They run only
// with SPOTTER_INTEGRATION=1; in that mode a missing browser fails them.
package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

var (
	browserOnce sync.Once
	shared      *cdp.Browser
	browserErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.Close(context.Background())
	}
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// integration skips t unless SPOTTER_INTEGRATION=1.
func integration(t *testing.T) {
	t.Helper()
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run tests against a real Chromium")
	}
}

// browser returns the test binary's one Chromium, started on first use. A
// browser that cannot start fails the test.
func browser(t *testing.T) *cdp.Browser {
	t.Helper()
	integration(t)
	browserOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		shared, browserErr = cdp.Launch(ctx, cdp.Config{})
	})
	if browserErr != nil {
		t.Fatalf("launch Chromium: %v", browserErr)
	}
	return shared
}

// serve serves testdata/ plus extra handlers on loopback.
func serve(t *testing.T, extra map[string]http.HandlerFunc) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServer(http.Dir("testdata")))
	for pattern, h := range extra {
		mux.HandleFunc(pattern, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// navigate loads url in d, as an operator would before a run.
func navigate(t *testing.T, d *cdp.Display, url string) {
	t.Helper()
	if err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: url}}); err != nil {
		t.Fatalf("navigate %s: %v", url, err)
	}
}

// allowAll is a policy that lets every kind run, anywhere.
func allowAll() actions.Policy { return actions.Policy{Allow: actions.Kinds(), Hosts: []string{"*"}} }
