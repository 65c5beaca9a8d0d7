package gemini

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// script is a RoundTripper that answers from a list and records when each
// request arrived and what body it carried.
type script struct {
	replies []func() (*http.Response, error)
	at      []time.Time
	bodies  []string
}

func (s *script) RoundTrip(r *http.Request) (*http.Response, error) {
	n := len(s.at)
	s.at = append(s.at, time.Now())
	b, _ := io.ReadAll(r.Body)
	s.bodies = append(s.bodies, string(b))
	if n >= len(s.replies) {
		return nil, errors.New("script exhausted")
	}
	return s.replies[n]()
}

func status(code int, header, body string) func() (*http.Response, error) {
	return func() (*http.Response, error) {
		h := http.Header{}
		if k, v, ok := strings.Cut(header, ": "); ok {
			h.Set(k, v)
		}
		return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader(body))}, nil
	}
}

func TestRetryTransport(t *testing.T) {
	const retryInfo = `{"error": {"code": 429, "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2.5s"}]}}`
	date := time.Date(2000, 1, 1, 0, 0, 42, 0, time.UTC).Format(http.TimeFormat) // synctest starts at 2000-01-01 00:00 UTC
	tests := []struct {
		name     string
		retries  int
		replies  []func() (*http.Response, error)
		want     int             // final status, 0 for an error
		waits    []time.Duration // between attempts; negative means "within jitter bounds of -d"
		wantBody string          // of the final response
	}{
		{name: "ok", retries: 3, replies: []func() (*http.Response, error){status(200, "", "ok")}, want: 200, wantBody: "ok"},
		{name: "retry-after seconds", retries: 3, replies: []func() (*http.Response, error){
			status(429, "Retry-After: 7", ""), status(200, "", "ok"),
		}, want: 200, waits: []time.Duration{7 * time.Second}, wantBody: "ok"},
		{name: "retry-after date", retries: 3, replies: []func() (*http.Response, error){
			status(503, "Retry-After: "+date, ""), status(200, "", "ok"),
		}, want: 200, waits: []time.Duration{42 * time.Second}, wantBody: "ok"},
		{name: "retry info", retries: 3, replies: []func() (*http.Response, error){
			status(429, "", retryInfo), status(200, "", "ok"),
		}, want: 200, waits: []time.Duration{2500 * time.Millisecond}, wantBody: "ok"},
		{name: "backoff", retries: 3, replies: []func() (*http.Response, error){
			status(500, "", ""), status(502, "", ""), func() (*http.Response, error) { return nil, errors.New("connection reset") }, status(200, "", "ok"),
		}, want: 200, waits: []time.Duration{-retryBase, -2 * retryBase, -4 * retryBase}, wantBody: "ok"},
		{name: "not retryable", retries: 3, replies: []func() (*http.Response, error){status(400, "", "bad")}, want: 400, wantBody: "bad"},
		{name: "retries exhausted", retries: 1, replies: []func() (*http.Response, error){
			status(503, "Retry-After: 1", "a"), status(503, "Retry-After: 1", "b"),
		}, want: 503, waits: []time.Duration{time.Second}, wantBody: "b"},
		{name: "no retries", retries: 0, replies: []func() (*http.Response, error){status(429, "Retry-After: 1", "x")}, want: 429, wantBody: "x"},
		{name: "retry-after too long", retries: 3, replies: []func() (*http.Response, error){status(429, "Retry-After: 86400", retryInfo)}, want: 429, wantBody: retryInfo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &script{replies: tt.replies}
				rt := &retryTransport{base: s, retries: tt.retries, timeout: time.Minute, log: slog.New(slog.DiscardHandler)}
				req, err := http.NewRequestWithContext(t.Context(), "POST", "http://gemini.test/v1beta/models/m:generateContent", strings.NewReader("body"))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := rt.RoundTrip(req)
				got, body := 0, ""
				if err == nil {
					got = resp.StatusCode
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					body = string(b)
				}
				if got != tt.want || body != tt.wantBody {
					t.Errorf("RoundTrip = %d %q, %v; want %d %q", got, body, err, tt.want, tt.wantBody)
				}
				if len(s.at) != len(tt.waits)+1 {
					t.Fatalf("RoundTrip made %d attempts, want %d", len(s.at), len(tt.waits)+1)
				}
				for i, w := range tt.waits {
					d := s.at[i+1].Sub(s.at[i])
					if w >= 0 && d != w || w < 0 && (d < -w/2 || d >= -w) {
						t.Errorf("wait before attempt %d = %v, want %v (negative: jittered in [-w/2, -w))", i+2, d, w)
					}
				}
				for i, b := range s.bodies {
					if b != "body" {
						t.Errorf("attempt %d sent body %q, want the request body replayed", i+1, b)
					}
				}
			})
		})
	}
}

func TestRetryTransportCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{replies: []func() (*http.Response, error){status(429, "Retry-After: 60", "")}}
		rt := &retryTransport{base: s, retries: 3, log: slog.New(slog.DiscardHandler)}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://gemini.test/", strings.NewReader("body"))
		start := time.Now()
		_, err := rt.RoundTrip(req)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Errorf("RoundTrip = %v after %v, want DeadlineExceeded after 5s", err, time.Since(start))
		}
	})
}

// TestRetryTransportTimeout checks the per-attempt timeout: a hung attempt
// is abandoned and the next one tried.
func TestRetryTransportTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var attempts int
		hang := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			attempts++
			if attempts == 1 {
				<-r.Context().Done()
				return nil, r.Context().Err()
			}
			return status(200, "", "ok")()
		})
		rt := &retryTransport{base: hang, retries: 1, timeout: 10 * time.Second, log: slog.New(slog.DiscardHandler)}
		req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://gemini.test/", strings.NewReader("body"))
		resp, err := rt.RoundTrip(req)
		if err != nil || resp.StatusCode != 200 || attempts != 2 {
			t.Fatalf("RoundTrip = %v, %v after %d attempts; want 200 after 2", resp, err, attempts)
		}
		resp.Body.Close()
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestRetryAfterParse(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"3", 3 * time.Second, true},
		{" 0.5 ", 500 * time.Millisecond, true},
		{"-1", 0, false},
		{"1e300", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	}
	for _, tt := range tests {
		got, ok := retryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
