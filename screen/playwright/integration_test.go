package playwright

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// pages serves small test pages; /slow answers after 700 ms, /slower
// after 5 s.
func pages(t testing.TB) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	page := func(path, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "no-store")
			fmt.Fprint(w, "<!doctype html><meta charset=utf-8>"+body)
		})
	}
	page("/a", `<title>a</title><a id=next href="/b" style="display:block;height:100vh">next</a>`)
	page("/b", `<title>b</title>b`)
	page("/spinner", `<div style="width:50px;height:50px;background:red;animation:spin 1s linear infinite"></div>
<style>@keyframes spin { to { transform: rotate(360deg) } }</style>`)
	fetch := func(path, url string) {
		page(path, `<button style="width:100%;height:100vh" onclick="fetch('`+url+`').then(r => r.text()).then(t => this.textContent = t)">go</button>`)
	}
	fetch("/fetch", "/slow")
	fetch("/fetch-slower", "/slower")
	page("/alert", `<button style="width:100%;height:100vh" onclick="alert('hello there')">alert</button>`)
	page("/hang", `<button style="width:100%;height:100vh" onclick="setTimeout(() => { for (;;) {} }, 0)">hang</button>`)
	slow := func(path string, d time.Duration) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
			fmt.Fprint(w, "done")
		})
	}
	slow("/slow", 700*time.Millisecond)
	slow("/slower", 5*time.Second)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// load navigates to url and waits for the page to settle.
func load(t testing.TB, d *Display, url string) screen.Shot {
	t.Helper()
	perform(t, d, actions.Action{Kind: actions.Navigate, URL: url})
	shot, err := d.Capture(t.Context(), screen.CaptureOptions{})
	if err != nil {
		t.Fatalf("Capture() after loading %s = %v", url, err)
	}
	return shot
}

func click(x, y float64) actions.Action {
	return actions.Action{Kind: actions.Click, At: actions.Pt(x, y), HasAt: true}
}

func TestNavigateHistory(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	srv := pages(t)
	shot := load(t, d, srv.URL+"/a")
	if shot.Frame.URL != srv.URL+"/a" {
		t.Errorf("Frame.URL after loading /a = %q", shot.Frame.URL)
	}
	perform(t, d, click(200, 200)) // the link to /b
	steps := []struct {
		action actions.Action
		url    string
	}{
		{actions.Action{Kind: actions.Screenshot}, srv.URL + "/b"},
		{actions.Action{Kind: actions.GoBack}, srv.URL + "/a"},
		{actions.Action{Kind: actions.GoForward}, srv.URL + "/b"},
	}
	for i, s := range steps {
		if s.action.Kind != actions.Screenshot {
			perform(t, d, s.action)
		}
		shot, err := d.Capture(t.Context(), screen.CaptureOptions{})
		if err != nil {
			t.Fatalf("step %d, %v: Capture() = %v", i, s.action.Kind, err)
		}
		if shot.Frame.URL != s.url || shot.Frame.Settle.TimedOut {
			t.Errorf("step %d, %v: Frame.URL %q, Settle %+v; want %q, settled", i, s.action.Kind, shot.Frame.URL, shot.Frame.Settle, s.url)
		}
		if !slices.Contains(shot.Events, "the page is now at "+s.url) {
			t.Errorf("step %d, %v: Shot.Events = %q, want the new URL noted", i, s.action.Kind, shot.Events)
		}
	}
	err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.GoForward}})
	if err == nil || !strings.Contains(err.Error(), "no next page") {
		t.Errorf("Perform(go_forward) at the end of the history = %v, want an error saying there is no next page", err)
	}
	err = d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: "http://127.0.0.1:1/"}})
	if err == nil || !strings.Contains(err.Error(), "net::ERR_") || strings.Contains(err.Error(), "Call log") {
		t.Errorf("Perform(navigate to a closed port) = %v, want a net::ERR_ error without Playwright's call log", err)
	}
}

func TestSettle(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	srv := pages(t)

	t.Run("waits for a request", func(t *testing.T) {
		load(t, d, srv.URL+"/fetch")
		perform(t, d, click(100, 100))
		start := time.Now()
		shot, err := d.Capture(t.Context(), screen.CaptureOptions{})
		if err != nil {
			t.Fatalf("Capture() = %v", err)
		}
		if waited := time.Since(start); waited < 500*time.Millisecond || shot.Frame.Settle.TimedOut {
			t.Errorf("Capture() while a 700 ms request runs: returned after %v, Settle %+v; want a settled wait for the request", waited, shot.Frame.Settle)
		}
	})

	t.Run("times out on an endless animation", func(t *testing.T) {
		load(t, d, srv.URL+"/spinner")
		shot, err := d.Capture(t.Context(), screen.CaptureOptions{SettleTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatalf("Capture() = %v", err)
		}
		s := shot.Frame.Settle
		if !s.TimedOut || !strings.Contains(s.Reason, "animation") || s.Waited < 300*time.Millisecond {
			t.Errorf("Capture(SettleTimeout 300ms) of a spinning page: Settle %+v, want a timeout after 300ms naming the animation", s)
		}
	})

	t.Run("times out on a pending request", func(t *testing.T) {
		load(t, d, srv.URL+"/fetch-slower")
		perform(t, d, click(100, 100))
		shot, err := d.Capture(t.Context(), screen.CaptureOptions{SettleTimeout: time.Second})
		if err != nil {
			t.Fatalf("Capture() = %v", err)
		}
		s := shot.Frame.Settle
		if !s.TimedOut || !strings.Contains(s.Reason, "/slower") {
			t.Errorf("Capture(SettleTimeout 1s) during a 5 s request: Settle %+v, want a timeout naming /slower", s)
		}
	})
}

func TestHoldKeyCanceled(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, pages(t).URL+"/b")
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.HoldKey, Keys: actions.Chord{actions.Shift}, Duration: time.Hour}})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("Perform(hold Shift for an hour) with a 200ms context = %v after %v, want DeadlineExceeded soon", err, time.Since(start))
	}
	// The key was released: a click reports no Shift.
	perform(t, d, click(10, 10))
	if _, err := d.Capture(t.Context(), screen.CaptureOptions{}); err != nil {
		t.Fatalf("Capture() after a canceled hold = %v", err)
	}
}

func TestHungPage(t *testing.T) {
	// The command timeout leaves room for a busy machine's first capture
	// of the page before it hangs (over 1 s once, three test packages at
	// a time on two cores); the hung page never answers within any.
	d := newDisplay(t, DisplayConfig{CommandTimeout: 3 * time.Second, SettleTimeout: 500 * time.Millisecond})
	load(t, d, pages(t).URL+"/hang")
	perform(t, d, click(100, 100))
	start := time.Now()
	_, err := d.Capture(t.Context(), screen.CaptureOptions{})
	if !errors.Is(err, ErrUnresponsive) {
		t.Errorf("Capture() of a page in an endless loop = %v, want ErrUnresponsive", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("Capture() of a page in an endless loop took %v", waited)
	}
	err = d.Perform(t.Context(), screen.Mapped{Action: click(10, 10)})
	if !errors.Is(err, ErrUnresponsive) && !errors.Is(err, screen.ErrGone) {
		t.Errorf("Perform(click) on a page in an endless loop = %v, want ErrUnresponsive", err)
	}
	// Close still ends everything (the test's cleanup checks it), and
	// the browser goes on working.
	start = time.Now()
	if err := d.Close(t.Context()); err != nil {
		t.Errorf("Close() of a page in an endless loop = %v", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("Close() of a page in an endless loop took %v", waited)
	}
	other := newDisplay(t, DisplayConfig{})
	load(t, other, pages(t).URL+"/b")
}

func TestGone(t *testing.T) {
	d := open(t, Config{})
	load(t, d, pages(t).URL+"/b")
	if err := d.b.browser.Close(); err != nil {
		t.Fatalf("close the browser under the display: %v", err)
	}
	if _, err := d.Capture(t.Context(), screen.CaptureOptions{}); !errors.Is(err, screen.ErrGone) {
		t.Errorf("Capture() after the browser closed = %v, want ErrGone", err)
	}
	if err := d.Perform(t.Context(), screen.Mapped{Action: click(1, 1)}); !errors.Is(err, screen.ErrGone) {
		t.Errorf("Perform(click) after the browser closed = %v, want ErrGone", err)
	}
	if err := d.Close(t.Context()); err != nil {
		t.Errorf("Close() after the browser closed = %v", err)
	}
	if err := d.Perform(t.Context(), screen.Mapped{Action: click(1, 1)}); !errors.Is(err, screen.ErrGone) {
		t.Errorf("Perform(click) after Close = %v, want ErrGone", err)
	}
}
