package playwright

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

// A capture carries what the page logged and requested since the one
// before: its console calls, an uncaught error, and its requests with
// method, status, type and time.
func TestCaptureCarriesPageLog(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`<!doctype html><meta charset=utf-8><button style="width:100%;height:100vh" onclick="
			console.warn('clicked'); console.error('something failed:', 'badly');
			fetch('/data').then(r => r.text()); fetch('/missing').catch(() => {});
			setTimeout(() => { throw new Error('boom'); }, 0);">go</button><script>console.log('loaded')</script>`))
	})
	mux.HandleFunc("/data", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	load(t, d, srv.URL+"/page")
	perform(t, d, click(300, 300))
	shot, err := d.Capture(t.Context(), screen.CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The page load's message belongs to the capture before.
	screentest.CheckConsole(t, shot.Log, []string{"warning console: clicked", "error console: something failed: badly", "error exception: Uncaught "},
		[]string{"loaded"})
	reqs := map[string]screen.Request{}
	for _, r := range shot.Log.Requests {
		reqs[strings.TrimPrefix(r.URL, srv.URL)] = r
	}
	if r := reqs["/data"]; r.Method != "GET" || r.Status != 200 || r.Type != "fetch" || r.Duration <= 0 {
		t.Errorf("request /data = %+v, want a GET fetch answered 200 with its time", r)
	}
	if r := reqs["/missing"]; r.Status != 404 {
		t.Errorf("request /missing = %+v, want 404 (requests %+v)", r, shot.Log.Requests)
	}
}
