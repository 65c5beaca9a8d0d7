// Package fieldsite is a web server for tests that type into a page: it
// serves one page whose script POSTs each value its field takes to
// /typed, and keeps what arrived, so that a test can say what really
// reached the browser (and that a refused action typed nothing).
package fieldsite

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Site serves one page and records the values posted to /typed.
type Site struct {
	*httptest.Server
	mu    sync.Mutex
	typed []string
}

// New serves page at path (a pattern such as "/{$}" or "/login.html")
// on loopback until t ends. The page reports its field's values with
// fetch('/typed', {method: 'POST', body: value}).
func New(t testing.TB, path, page string) *Site {
	s := &Site{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, page)
	})
	mux.HandleFunc("POST /typed", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		s.mu.Lock()
		s.typed = append(s.typed, string(b))
		s.mu.Unlock()
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Received returns the values the page reported, in order.
func (s *Site) Received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.typed...)
}
