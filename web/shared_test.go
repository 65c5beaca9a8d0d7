package web_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/spotter-harness/spotter/isolate/isolatetest"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/web"
)

// sharedServer is a server whose sessions share one browser
// (`spotter serve --browsers 1`, Config.Shared), and two pages for them:
// blue, which asks its own host and red's for an image, and red.
type sharedServer struct {
	*env
	pid         int           // the shared browser's process
	pages       [2]sharedPage // blue, then red
	own, pixels *atomic.Int64 // the image requests blue's host answered, and red's
}

type sharedPage struct {
	url  string
	want [3]uint8
}

func newSharedServer(t *testing.T) *sharedServer {
	t.Helper()
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("SPOTTER_INTEGRATION=1 runs this on a real Chromium")
	}
	before := isolatetest.BrowserChildren(t)
	pool, err := cdp.LaunchPool(t.Context(), cdp.Config{Logger: isolatetest.Logger()}, 1)
	if err != nil {
		t.Fatalf("LaunchPool() = %v", err)
	}
	t.Cleanup(func() { pool.Close(context.Background()) })
	pids := isolatetest.NewBrowserPIDs(t, before)
	if len(pids) != 1 {
		t.Fatalf("LaunchPool(1) started %d browser processes, want 1", len(pids))
	}
	s := &sharedServer{env: &env{t: t, data: t.TempDir()}, pid: pids[0], own: new(atomic.Int64), pixels: new(atomic.Int64)}
	red := pixelPage(t, isolatetest.Red, s.pixels)
	blue := pixelPage(t, isolatetest.Blue, s.own, "/pixel", red.URL+"/pixel")
	s.pages = [2]sharedPage{{blue.URL + "/", isolatetest.Blue}, {red.URL + "/", isolatetest.Red}}
	s.cfg = web.Config{DataDir: s.data, Token: testToken, Shared: pool}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// deleteAll deletes the executor sessions ids.
func (s *sharedServer) deleteAll(ids []string) {
	for _, id := range ids {
		r := s.request("DELETE", "/executor/sessions/"+id, nil)
		r.Body.Close()
	}
}

// With shared browsers (`spotter serve --browsers 1`, Config.Shared), the
// sessions' browsers on the host are browser contexts of one Chromium,
// each behind its own egress proxy: two sessions open at once each see
// their own start page, no browser process starts for either, and the
// first session's page, which asks its own host and the second session's
// for an image, reaches its own only: the second session's host is
// allowed to the second session alone.
func TestSharedBrowser(t *testing.T) {
	s := newSharedServer(t)
	before := isolatetest.BrowserChildren(t)
	var ids []string
	for _, p := range s.pages {
		id, got := s.execAt(p.url)
		if !isolatetest.Near(got, p.want) {
			t.Errorf("the session on %s shows %v, want %v", p.url, got, p.want)
		}
		ids = append(ids, id)
	}
	if n := isolatetest.NewBrowsers(t, before); n != 0 {
		t.Errorf("%d browser processes started with the sessions, want none: they share the pool's", n)
	}
	if s.own.Load() == 0 {
		t.Errorf("the first session's host answered no image request of its page: the page asked for none")
	}
	if n := s.pixels.Load(); n != 0 {
		t.Errorf("the second session's host answered %d image requests of the first session's page, want 0: the "+
			"sessions do not have proxies of their own", n)
	}
	s.deleteAll(ids)
}

// When the shared browser dies (`spotter serve --browsers 1`), every
// session on it goes on: the next call of each, posted at once, is
// answered with the death in words and a screenshot of the session's own
// page in a browser the pool launched again, one for all of them, and
// each session is still behind its own egress proxy there.
func TestSharedBrowserCrash(t *testing.T) {
	s := newSharedServer(t)
	ids := make([]string, len(s.pages))
	for i, p := range s.pages {
		code, a := s.createExec(map[string]any{"provider": "anthropic", "start_url": p.url,
			"approvals": map[string]any{"supervise": "none"}})
		if code != http.StatusOK || a.ID == "" {
			t.Fatalf("POST /executor/sessions on %s = %d %q %s", p.url, code, a.ID, a.Error)
		}
		ids[i] = a.ID
	}
	ownBefore := s.own.Load()

	beforeKill := isolatetest.BrowserChildren(t)
	if err := syscall.Kill(s.pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the shared browser: %v", err)
	}
	type answer struct {
		code int
		body []byte
		err  error
	}
	answers := make([]answer, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			a := &answers[i]
			a.code, a.body, a.err = s.post("/executor/sessions/"+id+"/call?wait=60s",
				`{"type":"tool_use","id":"toolu_after","name":"computer","input":{"action":"left_click","coordinate":[640,400]}}`)
		})
	}
	wg.Wait()
	for i, a := range answers {
		if a.err != nil || a.code != http.StatusOK {
			t.Fatalf("session %d's call after the browser died = %d %.300s, %v; want 200", i, a.code, a.body, a.err)
		}
		// The click did not run, so its result has no image (see
		// harness/anthropic): the model asks for one.
		if text, _ := anthropicResult(t, a.body); !strings.Contains(text, "The browser died") || !strings.Contains(text, "started anew") {
			t.Errorf("session %d's result says %q, want that the browser died and was started anew", i, text)
		}
		code, body := s.postRaw("/executor/sessions/"+ids[i]+"/call?wait=60s",
			`{"type":"tool_use","id":"toolu_look","name":"computer","input":{"action":"screenshot"}}`)
		if code != http.StatusOK {
			t.Fatalf("session %d's screenshot call = %d %.300s", i, code, body)
		}
		if _, img := anthropicResult(t, body); img == nil {
			t.Errorf("session %d's screenshot call after the browser died has no image: %.300s", i, body)
		} else if got := isolatetest.Centre(t, img); !isolatetest.Near(got, s.pages[i].want) {
			t.Errorf("session %d shows %v after the browser died, want its own page's %v", i, got, s.pages[i].want)
		}
	}
	if n := isolatetest.NewBrowsers(t, beforeKill); n != 1 {
		t.Errorf("%d browser processes started after the shared one died, want 1: the pool's, for every session", n)
	}
	if s.own.Load() == ownBefore {
		t.Errorf("the first session's page was not loaded again after the browser died")
	}
	if n := s.pixels.Load(); n != 0 {
		t.Errorf("the second session's host answered %d image requests of the first session's page, want 0", n)
	}
	s.deleteAll(ids)
}

// anthropicResult returns the text and the screenshot (nil if none) of an
// executor call's Anthropic tool_result.
func anthropicResult(t *testing.T, body []byte) (string, []byte) {
	t.Helper()
	var a struct {
		Result struct {
			Content []struct {
				Type   string `json:"type"`
				Text   string `json:"text"`
				Source struct {
					Data string `json:"data"`
				} `json:"source"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("executor answer %.300s: %v", body, err)
	}
	var text []string
	var img []byte
	for _, c := range a.Result.Content {
		switch c.Type {
		case "text":
			text = append(text, c.Text)
		case "image":
			var err error
			if img, err = base64.StdEncoding.DecodeString(c.Source.Data); err != nil {
				t.Fatalf("the result's image: %v", err)
			}
		}
	}
	return strings.Join(text, "\n"), img
}

// pixelPage serves a page filled with colour c that shows the images at
// srcs, and counts in pixels the requests for its own /pixel.
func pixelPage(t *testing.T, c [3]uint8, pixels *atomic.Int64, srcs ...string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/pixel" {
			pixels.Add(1)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		imgs := ""
		for _, src := range srcs {
			imgs += `<img src="` + src + `" width=1 height=1>`
		}
		fmt.Fprintf(w, `<!doctype html><body style="margin:0">%s<div style="width:100vw;height:100vh;background:rgb(%d,%d,%d)"></div>`,
			imgs, c[0], c[1], c[2])
	}))
	t.Cleanup(s.Close)
	return s
}
