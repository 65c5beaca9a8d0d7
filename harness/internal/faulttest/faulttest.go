// Package faulttest is an HTTP server for the provider adapters' fault
// tests: it answers the first requests with scripted faults (an error
// status, a body that is not the API's JSON, a response cut off part-way)
// and hands the rest to a provider's fake, counting every request.
package faulttest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Fault is one scripted misbehaviour.
type Fault struct {
	Status      int         // default 200
	Header      http.Header // added to the response
	ContentType string      // default "application/json"
	Body        string
	// Cut announces Body's full length but sends only its first half,
	// then closes the connection.
	Cut bool
}

// Common faults.
var (
	// HTML is the error page a proxy in front of the API might send.
	HTML = Fault{ContentType: "text/html; charset=utf-8",
		Body: "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>"}
	// Garbage is a 200 whose body is not JSON at all.
	Garbage = Fault{Body: "\x00\x01garbage{{{ not json"}
)

// Status is an error answer with a JSON error body saying msg, in the
// shape every provider uses ({"error": {"message": ...}}).
func Status(code int, msg string, header ...string) Fault {
	f := Fault{Status: code, Body: fmt.Sprintf(`{"type":"error","error":{"type":"fault","code":%d,"message":%q}}`, code, msg)}
	if len(header) == 2 {
		f.Header = http.Header{header[0]: {header[1]}}
	}
	return f
}

// Cut is a response holding body that is cut off half-way.
func Cut(body string) Fault { return Fault{Body: body, Cut: true} }

// Server is the faulty endpoint. Its methods may be called from any
// goroutine.
type Server struct {
	URL string // base URL, for an adapter's Config.BaseURL

	next   http.Handler
	mu     sync.Mutex
	faults []Fault
	n      int
	seen   []string // request header values
}

// New starts a server on 127.0.0.1 that answers with faults in order,
// then passes requests to next (nil: every later request gets a 500). It
// is closed when the test ends.
func New(t testing.TB, next http.Handler, faults ...Fault) *Server {
	s := &Server{next: next, faults: faults}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// Requests returns how many requests arrived.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Saw reports whether a request carried v in a header value, such as an
// API key in "Authorization: Bearer <key>".
func (s *Server) Saw(v string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.seen {
		if strings.Contains(h, v) {
			return true
		}
	}
	return false
}

// ServeHTTP answers r with the next fault, or passes it on.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.n++
	for _, vs := range r.Header {
		s.seen = append(s.seen, vs...)
	}
	var f *Fault
	if len(s.faults) > 0 {
		f = &s.faults[0]
		s.faults = s.faults[1:]
	}
	s.mu.Unlock()
	if f == nil {
		if s.next == nil {
			http.Error(w, "faulttest: no reply left", http.StatusInternalServerError)
			return
		}
		s.next.ServeHTTP(w, r)
		return
	}
	ct := f.ContentType
	if ct == "" {
		ct = "application/json"
	}
	code := f.Status
	if code == 0 {
		code = http.StatusOK
	}
	if f.Cut {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, "faulttest: cannot hijack", http.StatusInternalServerError)
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
			code, http.StatusText(code), ct, len(f.Body), f.Body[:len(f.Body)/2])
		buf.Flush()
		return
	}
	for k, v := range f.Header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(code)
	_, _ = w.Write([]byte(f.Body))
}
