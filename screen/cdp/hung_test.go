package cdp

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// hang makes d's page hang, and returns once it does: a timer of the page
// enters an endless loop whose first statement is a synchronous request to
// a server of this test, which holds the request until t ends. When the
// server sees the request, the page's main thread is inside the loop and
// will not run anything else, so no sleep has to guess when that happens.
func hang(t *testing.T, d *Display) {
	t.Helper()
	started := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(started) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Header().Set("Access-Control-Allow-Origin", "*")
	}))
	t.Cleanup(func() {
		close(release)
		srv.CloseClientConnections()
		srv.Close()
	})
	eval[float64](t, d, fmt.Sprintf(`setTimeout(() => {
		for (;;) {
			const x = new XMLHttpRequest();
			x.open("GET", %q, false);
			try { x.send(); } catch {}
		}
	}, 0), 1`, srv.URL+"/hang"))
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatalf("the page did not start its endless loop within 10s")
	}
}
