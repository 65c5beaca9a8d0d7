package cdp

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// TestDisplayProxy opens three displays on the shared test browser: two
// with a proxy each (DisplayConfig.Proxy), one without, and navigates each
// to a page on loopback. Each proxied display's requests, loopback
// included, must reach its own proxy and no other, and the third display
// must reach the page directly: proxies are per display, not per browser.
func TestDisplayProxy(t *testing.T) {
	integration(t)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<title>direct</title><p>direct</p>")
	}))
	defer origin.Close()
	type seen struct {
		mu   sync.Mutex
		urls []string
	}
	proxy := func(name string, s *seen) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.urls = append(s.urls, r.URL.String())
			s.mu.Unlock()
			fmt.Fprintf(w, "<title>%s</title><p>%s</p>", name, name)
		}))
	}
	var seenA, seenB seen
	pa, pb := proxy("proxy A", &seenA), proxy("proxy B", &seenB)
	defer pa.Close()
	defer pb.Close()

	displays := map[string]*Display{
		"proxy A": newDisplay(t, DisplayConfig{Proxy: "http://" + pa.Listener.Addr().String()}),
		"proxy B": newDisplay(t, DisplayConfig{Proxy: "http://" + pb.Listener.Addr().String()}),
		"direct":  newDisplay(t, DisplayConfig{}),
	}
	page := origin.URL + "/page"
	for want, d := range displays {
		do(t, d, actions.Action{Kind: actions.Navigate, URL: page})
		capture(t, d, screen.CaptureOptions{Size: screen.Size{W: 64, H: 40}})
		if got := eval[string](t, d, "document.title"); got != want {
			t.Errorf("display %q: the page's title is %q, want %q", want, got, want)
		}
	}
	for name, s := range map[string]*seen{"proxy A": &seenA, "proxy B": &seenB} {
		s.mu.Lock()
		urls := s.urls
		s.mu.Unlock()
		if len(urls) == 0 || !strings.HasPrefix(urls[0], origin.URL) {
			t.Errorf("%s was asked for %q, want %s first", name, urls, page)
		}
	}
}
