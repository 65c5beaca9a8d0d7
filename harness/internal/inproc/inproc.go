// Package inproc delivers HTTP requests to a handler in memory, without
// the network: the provider fakes (anthropictest, openaitest,
// geminitest, chattest) serve a Model through it inside a testing/synctest
// bubble, where the waits a Retry-After asks for take no real time.
package inproc

import (
	"net/http"
	"net/http/httptest"
)

// Transport returns a RoundTripper that serves each request with h. A
// request whose context is done before or while h serves it fails with
// the context's error, as over the network.
func Transport(h http.Handler) http.RoundTripper { return transport{h} }

type transport struct{ h http.Handler }

func (t transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	if r.Body != nil {
		defer r.Body.Close()
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	res := rec.Result()
	res.Request = r
	return res, nil
}
