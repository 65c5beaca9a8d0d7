package retry

import (
	"bytes"
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
		h := http.Header{"Content-Type": {"application/json"}}
		if k, v, ok := strings.Cut(header, ": "); ok {
			h.Set(k, v)
		}
		return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader(body))}, nil
	}
}

// cut is a 200 whose body breaks off after part.
func cut(part string) func() (*http.Response, error) {
	return func() (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(io.MultiReader(
			strings.NewReader(part), errReader{io.ErrUnexpectedEOF}))}, nil
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func reset() (*http.Response, error) { return nil, errors.New("connection reset by peer") }

func TestTransport(t *testing.T) {
	date := time.Date(2000, 1, 1, 0, 0, 42, 0, time.UTC).Format(http.TimeFormat) // synctest starts at 2000-01-01 00:00 UTC
	hint := `{"error": {"wait": "2.5s"}}`
	tests := []struct {
		name     string
		retries  int
		replies  []func() (*http.Response, error)
		want     int             // final status, 0 for an error
		waits    []time.Duration // between attempts; negative means "jittered in [-3d/4, -d]"
		wantBody string          // of the final response
		wantErr  string
	}{
		{name: "ok", retries: 3, replies: []func() (*http.Response, error){status(200, "", `"ok"`)}, want: 200, wantBody: `"ok"`},
		{name: "retry-after seconds", retries: 3, replies: []func() (*http.Response, error){
			status(429, "Retry-After: 7", ""), status(200, "", `"ok"`),
		}, want: 200, waits: []time.Duration{7 * time.Second}, wantBody: `"ok"`},
		{name: "retry-after-ms", retries: 3, replies: []func() (*http.Response, error){
			status(503, "Retry-After-Ms: 40", ""), status(200, "", `"ok"`),
		}, want: 200, waits: []time.Duration{40 * time.Millisecond}, wantBody: `"ok"`},
		{name: "retry-after date", retries: 3, replies: []func() (*http.Response, error){
			status(503, "Retry-After: "+date, ""), status(200, "", `"ok"`),
		}, want: 200, waits: []time.Duration{42 * time.Second}, wantBody: `"ok"`},
		{name: "hint", retries: 3, replies: []func() (*http.Response, error){
			status(429, "", hint), status(200, "", `"ok"`),
		}, want: 200, waits: []time.Duration{2500 * time.Millisecond}, wantBody: `"ok"`},
		{name: "backoff", retries: 5, replies: []func() (*http.Response, error){
			status(500, "", ""), status(502, "", ""), reset, cut(`{"id":`), status(200, "", "<html>"), status(200, "", `"ok"`),
		}, want: 200, waits: []time.Duration{-DefaultWait, -2 * DefaultWait, -4 * DefaultWait, -8 * DefaultWait, -16 * DefaultWait}, wantBody: `"ok"`},
		{name: "not retryable", retries: 3, replies: []func() (*http.Response, error){status(400, "", "bad")}, want: 400, wantBody: "bad"},
		{name: "x-should-retry false", retries: 3, replies: []func() (*http.Response, error){status(500, "X-Should-Retry: false", "no")}, want: 500, wantBody: "no"},
		{name: "429 thrice", retries: 2, replies: []func() (*http.Response, error){
			status(429, "", ""), status(429, "", ""), status(429, "", `{"error":{"type":"rate_limit_error","message":"slow down"}}`),
		}, waits: []time.Duration{-DefaultWait, -2 * DefaultWait},
			wantErr: "the API answered 429 Too Many Requests 3 times; giving up: rate_limit_error: slow down"},
		{name: "mixed", retries: 2, replies: []func() (*http.Response, error){
			status(500, "", ""), cut(`{"id":`), status(200, "Content-Type: text/html", "<html><body>Bad Gateway</body></html>"),
		}, waits: []time.Duration{-DefaultWait, -2 * DefaultWait},
			wantErr: `the API failed 3 times (answered 500 Internal Server Error; answered 200 OK but the response was cut off after 6 bytes; answered 200 OK with a body that is not JSON (text/html: "<html><body>Bad Gateway</body></html>")); giving up`},
		{name: "no retries", retries: 0, replies: []func() (*http.Response, error){status(529, "Retry-After: 1", "x")},
			wantErr: "the API answered 529 Overloaded; giving up: x"},
		{name: "retry-after too long", retries: 3, replies: []func() (*http.Response, error){status(429, "Retry-After: 86400", "")},
			wantErr: "the API answered 429 Too Many Requests and asked to wait 24h0m0s, longer than the 2m0s allowed; giving up"},
		{name: "wrong shape", retries: 1, replies: []func() (*http.Response, error){status(200, "", `{"x":1}`), status(200, "", `{"x":2}`)},
			waits:   []time.Duration{-DefaultWait},
			wantErr: "the API answered 200 OK with JSON that is not a thing 2 times; giving up"},
		{name: "reset", retries: 1, replies: []func() (*http.Response, error){reset, reset},
			waits:   []time.Duration{-DefaultWait},
			wantErr: "the API could not be reached (connection reset by peer) 2 times; giving up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &script{replies: tt.replies}
				rt := &Transport{Base: s, Retries: tt.retries, Timeout: time.Minute, API: "the API",
					Check: func(b []byte) error {
						if bytes.HasPrefix(b, []byte(`{"x"`)) {
							return errors.New("a thing")
						}
						return nil
					},
					Hint: func(b []byte) (time.Duration, bool) {
						if string(b) == hint {
							return 2500 * time.Millisecond, true
						}
						return 0, false
					},
					Log: slog.New(slog.DiscardHandler)}
				req, err := http.NewRequestWithContext(t.Context(), "POST", "http://api.test/v1/x", strings.NewReader("body"))
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
				if tt.wantErr != "" {
					var e *Error
					if !errors.As(err, &e) || err.Error() != tt.wantErr {
						t.Errorf("RoundTrip error = %v, want *Error %q", err, tt.wantErr)
					}
				} else if got != tt.want || body != tt.wantBody {
					t.Errorf("RoundTrip = %d %q, %v; want %d %q", got, body, err, tt.want, tt.wantBody)
				}
				if len(s.at) != len(tt.waits)+1 {
					t.Fatalf("RoundTrip made %d attempts, want %d", len(s.at), len(tt.waits)+1)
				}
				for i, w := range tt.waits {
					d := s.at[i+1].Sub(s.at[i])
					if w >= 0 && d != w || w < 0 && (d <= -w*3/4 || d > -w) {
						t.Errorf("wait before attempt %d = %v, want %v (negative: jittered in (-3w/4, -w])", i+2, d, w)
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

func TestTransportWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{replies: []func() (*http.Response, error){status(500, "", ""), status(500, "", ""), status(200, "", "{}")}}
		rt := &Transport{Base: s, Retries: 2, Wait: time.Millisecond}
		req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://api.test/", strings.NewReader("body"))
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatalf("RoundTrip: %v", err)
		}
		if d := s.at[2].Sub(s.at[0]); d > 3*time.Millisecond {
			t.Errorf("two backoffs with Wait 1ms took %v, want at most 3ms", d)
		}
	})
}

func TestTransportCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{replies: []func() (*http.Response, error){status(429, "Retry-After: 60", "")}}
		rt := &Transport{Base: s, Retries: 3}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://api.test/", strings.NewReader("body"))
		start := time.Now()
		_, err := rt.RoundTrip(req)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Errorf("RoundTrip = %v after %v, want DeadlineExceeded after 5s", err, time.Since(start))
		}
	})
}

// TestTransportTimeout checks the per-attempt timeout: a hung attempt is
// abandoned and the next one tried; when all hang, the error says so and
// unwraps to context.DeadlineExceeded.
func TestTransportTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var attempts int
		hang := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			attempts++
			if attempts != 2 {
				<-r.Context().Done()
				return nil, r.Context().Err()
			}
			return status(200, "", "{}")()
		})
		rt := &Transport{Base: hang, Retries: 1, Timeout: 10 * time.Second}
		req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://api.test/", strings.NewReader("body"))
		resp, err := rt.RoundTrip(req)
		if err != nil || resp.StatusCode != 200 || attempts != 2 {
			t.Fatalf("RoundTrip = %v, %v after %d attempts; want 200 after 2", resp, err, attempts)
		}
		rt.Retries = 0
		_, err = rt.RoundTrip(req)
		if want := "the provider did not answer within 10s; giving up"; !errors.Is(err, context.DeadlineExceeded) || err.Error() != want {
			t.Errorf("RoundTrip of a hung attempt = %v, want %q wrapping DeadlineExceeded", err, want)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{}, 0, false},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{http.Header{"Retry-After": {" 0.5 "}}, 500 * time.Millisecond, true},
		{http.Header{"Retry-After": {"-1"}}, 0, false},
		{http.Header{"Retry-After": {"1e300"}}, 0, false},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second, true},
		{http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0, true},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After-Ms": {"x"}, "Retry-After": {"9"}}, 9 * time.Second, true},
	}
	for _, tt := range tests {
		got, ok := After(tt.h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("After(%v) = %v, %v; want %v, %v", tt.h, got, ok, tt.want, tt.ok)
		}
	}
}

func TestScrub(t *testing.T) {
	const key = "sk-secret-1234"
	err := Scrubbed(&Error{API: "the API", Attempts: []string{"answered 401 Unauthorized"}, Message: "bad key " + key}, key)
	var e *Error
	if strings.Contains(err.Error(), key) || !errors.As(err, &e) {
		t.Errorf("Scrubbed(...) = %q (As *Error: %v), want no key and the chain kept", err, e != nil)
	}
	if Scrubbed(nil, key) != nil {
		t.Errorf("Scrubbed(nil) != nil")
	}
	if got := Scrub("abc", "ab"); got != "abc" {
		t.Errorf("Scrub with a 2-byte secret = %q, want it unchanged", got)
	}
}
