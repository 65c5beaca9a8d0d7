package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"

	"github.com/spotter-harness/spotter/isolate/isolatetest"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/web"
)

// With shared browsers (`spotter serve --browsers 1`, Config.Shared), the
// sessions' browsers on the host are browser contexts of one Chromium,
// each behind its own egress proxy: two sessions open at once each see
// their own start page, no browser process starts for either, and the
// first session's page, which asks its own host and the second session's
// for an image, reaches its own only: the second session's host is
// allowed to the second session alone.
func TestSharedBrowser(t *testing.T) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("SPOTTER_INTEGRATION=1 runs this on a real Chromium")
	}
	pool, err := cdp.LaunchPool(t.Context(), cdp.Config{Logger: isolatetest.Logger()}, 1)
	if err != nil {
		t.Fatalf("LaunchPool() = %v", err)
	}
	t.Cleanup(func() { pool.Close(context.Background()) })

	var pixels, own atomic.Int64
	red := pixelPage(t, isolatetest.Red, &pixels)
	blue := pixelPage(t, isolatetest.Blue, &own, "/pixel", red.URL+"/pixel")

	e := &env{t: t, data: t.TempDir()}
	e.cfg = web.Config{DataDir: e.data, Token: testToken, Shared: pool}
	e.start()
	t.Cleanup(e.stop)

	before := isolatetest.BrowserChildren(t)
	var ids []string
	for _, p := range []struct {
		url  string
		want [3]uint8
	}{{blue.URL + "/", isolatetest.Blue}, {red.URL + "/", isolatetest.Red}} {
		id, got := e.execAt(p.url)
		if !isolatetest.Near(got, p.want) {
			t.Errorf("the session on %s shows %v, want %v", p.url, got, p.want)
		}
		ids = append(ids, id)
	}
	if n := isolatetest.NewBrowsers(t, before); n != 0 {
		t.Errorf("%d browser processes started with the sessions, want none: they share the pool's", n)
	}
	if own.Load() == 0 {
		t.Errorf("the first session's host answered no image request of its page: the page asked for none")
	}
	if n := pixels.Load(); n != 0 {
		t.Errorf("the second session's host answered %d image requests of the first session's page, want 0: the "+
			"sessions do not have proxies of their own", n)
	}
	for _, id := range ids {
		r := e.request("DELETE", "/executor/sessions/"+id, nil)
		r.Body.Close()
	}
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
