// Package retry is the HTTP transport every provider adapter sends through.
// It retries, a bounded number of times, what a model endpoint gets wrong
// for a while: connection errors and timeouts, 408, 409, 429 and 5xx
// answers, bodies cut off part-way, and 2xx bodies that are not the JSON
// the API sends (an HTML error page from a proxy, a wrong JSON shape). It
// waits between attempts as the server asks (Retry-After-Ms, Retry-After,
// or a hint the adapter reads from the body), else with jittered
// exponential backoff, and stops waiting when the request's context ends.
// When the attempts run out it returns an *Error that says in plain words
// what happened, such as "the Anthropic API answered 429 Too Many Requests
// 3 times; giving up".
//
// The adapters turn their SDKs' own retries off and use this instead, so
// that a 2xx body that is garbage or cut off is retried too, every adapter
// follows one policy, and the final error counts the attempts.
package retry

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Defaults of Transport.
const (
	DefaultWait    = 500 * time.Millisecond // first backoff when the server names no wait
	DefaultMaxWait = 2 * time.Minute        // longest server-requested wait honoured
	// MaxBackoff caps the exponential backoff.
	MaxBackoff = 30 * time.Second
	// MaxBody bounds a response body; a longer one is an error, not retried.
	MaxBody = 64 << 20
)

// Transport is an http.RoundTripper that retries. Its zero value sends
// every request once through http.DefaultTransport and checks only that a
// 2xx body is JSON.
type Transport struct {
	Base    http.RoundTripper // nil means http.DefaultTransport
	Retries int               // attempts after the first; 0 means none
	// Wait is the first backoff when the server names no wait; it doubles
	// with each retry up to MaxBackoff, less up to a quarter of jitter.
	// Zero means DefaultWait.
	Wait time.Duration
	// MaxWait is the longest wait a server may ask for: one that asks for
	// more (a daily quota) ends the retries at once. Zero means
	// DefaultMaxWait.
	MaxWait time.Duration
	// Timeout bounds each attempt, reading the body included; 0 means none.
	Timeout time.Duration
	// Check says whether a 2xx body is what the API sends; an error makes
	// the attempt a failure that is retried. Nil accepts any JSON value.
	Check func(body []byte) error
	// Hint reads a wait the server asked for in an error body (Google's
	// google.rpc.RetryInfo); nil means only the headers are read.
	Hint func(body []byte) (time.Duration, bool)
	// API names the endpoint in errors and logs: "the Anthropic API".
	// Empty means "the provider".
	API string
	// Secrets are removed from every error and log line: the API key, which
	// a misconfigured proxy may echo.
	Secrets []string
	Log     *slog.Logger // nil means no logging
}

// Error is what a request that never succeeded returns, wrapped by
// http.Client in a *url.Error: errors.As finds it.
type Error struct {
	API      string   // "the Anthropic API"
	Attempts []string // what each attempt got, in words: "429 Too Many Requests"
	// Status is the HTTP status of the last attempt; 0 if it got none.
	Status int
	// Message is the provider's own message in the last answer, if any.
	Message string
	// Wait, when set, is a wait the server asked for that is too long.
	Wait, MaxWait time.Duration
	// Err is the last attempt's error, if it got no answer (a timeout, a
	// reset connection); Unwrap returns it.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.API)
	n := len(e.Attempts)
	same := true
	for _, a := range e.Attempts {
		same = same && a == e.Attempts[0]
	}
	switch {
	case n == 0:
		b.WriteString(" was not asked")
	case same && n == 1:
		fmt.Fprintf(&b, " %s", e.Attempts[0])
	case same:
		fmt.Fprintf(&b, " %s %d times", e.Attempts[0], n)
	default:
		fmt.Fprintf(&b, " failed %d times (%s)", n, strings.Join(e.Attempts, "; "))
	}
	if e.Wait > 0 {
		fmt.Fprintf(&b, " and asked to wait %v, longer than the %v allowed", e.Wait, e.MaxWait)
	}
	b.WriteString("; giving up")
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap returns the last attempt's error, if it got no answer.
func (e *Error) Unwrap() error { return e.Err }

// RoundTrip sends r until an attempt succeeds, fails in a way that a retry
// would not change (a 400, a 401), or the attempts run out. It blocks for
// the attempts and the waits between them, and returns early, with the
// context's cause, when r's context ends.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	api := cmp.Or(t.API, "the provider")
	replayable := r.Body == nil || r.Body == http.NoBody || r.GetBody != nil
	fail := &Error{API: api}
	req := r
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			req = r.Clone(ctx)
			if r.GetBody != nil {
				body, err := r.GetBody()
				if err != nil {
					return nil, fmt.Errorf("%s: replay the request body: %w", api, err)
				}
				req.Body = body
			}
		}
		res, what, retry, err := t.once(req)
		if cerr := ctx.Err(); cerr != nil {
			if res != nil {
				res.Body.Close()
			}
			return nil, context.Cause(ctx)
		}
		if what == "" { // done: a success, or an answer a retry would not change
			return res, err
		}
		fail.Attempts = append(fail.Attempts, t.scrub(what))
		fail.Status, fail.Message, fail.Err = 0, "", err
		var body []byte
		if res != nil {
			fail.Status = res.StatusCode
			body, _ = io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode >= 300 { // a bad 2xx body is described in what
				fail.Message = t.scrub(message(body))
			}
		}
		if !retry || !replayable || attempt >= t.Retries {
			return nil, fail
		}
		wait, asked := t.backoff(attempt, res, body)
		if maxWait := cmp.Or(t.MaxWait, DefaultMaxWait); asked && wait > maxWait {
			fail.Wait, fail.MaxWait = wait, maxWait
			return nil, fail
		}
		if t.Log != nil {
			t.Log.WarnContext(ctx, "provider request failed; retrying", "api", api, "attempt", attempt+1,
				"got", t.scrub(what), "wait", wait)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, context.Cause(ctx)
		case <-timer.C:
		}
	}
}

// once sends one attempt. It returns the response with its body read into
// memory, and, if the attempt failed, what it got in words and whether a
// retry might do better. A response that failed keeps its body for the
// caller to read; err is set only when there is no response.
func (t *Transport) once(req *http.Request) (res *http.Response, what string, retry bool, err error) {
	ctx, cancel := req.Context(), context.CancelFunc(func() {})
	if t.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, t.Timeout)
	}
	defer cancel()
	base := cmp.Or[http.RoundTripper](t.Base, http.DefaultTransport)
	res, err = base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		if ctx.Err() != nil && req.Context().Err() == nil {
			return nil, fmt.Sprintf("did not answer within %v", t.Timeout), true, context.DeadlineExceeded
		}
		return nil, "could not be reached (" + err.Error() + ")", true, err
	}
	body, rerr := io.ReadAll(io.LimitReader(res.Body, MaxBody+1))
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	res.ContentLength = int64(len(body))
	switch {
	case rerr != nil && ctx.Err() != nil && req.Context().Err() == nil:
		return res, fmt.Sprintf("did not finish its answer within %v", t.Timeout), true, nil
	case rerr != nil:
		return res, fmt.Sprintf("answered %s but the response was cut off after %d bytes", statusText(res), len(body)), true, nil
	case len(body) > MaxBody:
		return res, fmt.Sprintf("answered %s with a response larger than %d MiB", statusText(res), MaxBody>>20), false, nil
	}
	switch h := res.Header.Get("X-Should-Retry"); {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		if err := check(t.Check, res, body); err != nil {
			return res, fmt.Sprintf("answered %s with %v", statusText(res), err), true, nil
		}
		return res, "", false, nil
	case h == "false":
		return res, "", false, nil
	case h == "true", retryable(res.StatusCode):
		return res, "answered " + statusText(res), true, nil
	}
	return res, "", false, nil
}

// check runs c, or the default check, on a 2xx body.
func check(c func([]byte) error, res *http.Response, body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("an empty body")
	}
	if !json.Valid(body) {
		what := "text"
		if mt, _, err := mime.ParseMediaType(res.Header.Get("Content-Type")); err == nil {
			what = mt
		}
		return fmt.Errorf("a body that is not JSON (%s: %q)", what, excerpt(body, 60))
	}
	if c != nil {
		if err := c(body); err != nil {
			return fmt.Errorf("JSON that is not %v", err)
		}
	}
	return nil
}

func retryable(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return true
	}
	return code >= 500
}

// statusText is "429 Too Many Requests".
func statusText(res *http.Response) string {
	t := http.StatusText(res.StatusCode)
	if res.StatusCode == 529 {
		t = "Overloaded" // Anthropic's own status
	}
	if t != "" {
		return fmt.Sprintf("%d %s", res.StatusCode, t)
	}
	return strconv.Itoa(res.StatusCode)
}

// backoff returns how long to wait before retry attempt+1, and whether the
// server asked for that wait.
func (t *Transport) backoff(attempt int, res *http.Response, body []byte) (time.Duration, bool) {
	if res != nil {
		if d, ok := After(res.Header, time.Now()); ok {
			return d, true
		}
		if t.Hint != nil {
			if d, ok := t.Hint(body); ok {
				return d, true
			}
		}
	}
	b := MaxBackoff
	if attempt < 30 {
		b = min(cmp.Or(t.Wait, DefaultWait)<<attempt, MaxBackoff)
	}
	if j := int64(b / 4); j > 0 {
		b -= time.Duration(rand.Int64N(j))
	}
	return b, false
}

// After reads the wait a response asks for: Retry-After-Ms (milliseconds,
// OpenAI's and Anthropic's), else Retry-After (seconds or an HTTP date).
func After(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > 1e6 {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// message is the provider's own message in an error body: error.message
// (Anthropic, OpenAI, Google), else a top-level message or a string
// error, else a short excerpt of a body that is not JSON.
func message(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) != nil {
		if len(bytes.TrimSpace(body)) == 0 || bytes.HasPrefix(bytes.TrimSpace(body), []byte("<")) {
			return "" // an HTML page says nothing the status does not
		}
		return excerpt(body, 200)
	}
	var e struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	var s string
	switch {
	case json.Unmarshal(v.Error, &e) == nil && (e.Message != "" || e.Type != ""):
		if e.Type != "" && e.Message != "" {
			return excerpt([]byte(e.Type+": "+e.Message), 300)
		}
		return excerpt([]byte(e.Type+e.Message), 300)
	case json.Unmarshal(v.Error, &s) == nil && s != "":
		return excerpt([]byte(s), 300)
	}
	return excerpt([]byte(v.Message), 300)
}

// excerpt is the first n bytes of b as valid UTF-8 on one line.
func excerpt(b []byte, n int) string {
	s := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(string(b), "?"))
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func (t *Transport) scrub(s string) string { return Scrub(s, t.Secrets...) }

// Scrub replaces every secret of at least 4 bytes in s with "[redacted]".
func Scrub(s string, secrets ...string) string {
	for _, v := range secrets {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

// Scrubbed returns err with every secret removed from its text; errors.Is
// and errors.As still see err's chain. Nil stays nil.
func Scrubbed(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := Scrub(err.Error(), secrets...)
	if msg == err.Error() {
		return err
	}
	return &scrubbed{msg: msg, err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (s *scrubbed) Error() string { return s.msg }
func (s *scrubbed) Unwrap() error { return s.err }
