package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retry policy. The SDK's own retry ignores Retry-After, so the Model's
// HTTP client retries through retryTransport instead.
const (
	retryBase = 500 * time.Millisecond // first backoff without a server hint
	retryCap  = 30 * time.Second       // longest backoff without a server hint
	// retryAfterMax is the longest server-requested wait honoured; a
	// longer one (a daily quota) is returned to the caller at once.
	retryAfterMax = 2 * time.Minute
	// errorPeek bounds how much of an error body is read for RetryInfo.
	errorPeek = 64 << 10
)

// retryTransport retries requests that failed with 408, 429 or 5xx (or a
// transport error), waiting as the response's Retry-After header or its
// google.rpc.RetryInfo says, else with jittered exponential backoff. Each
// attempt gets its own timeout.
type retryTransport struct {
	base    http.RoundTripper
	retries int           // attempts after the first
	timeout time.Duration // per attempt; 0 means none
	log     *slog.Logger
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	r := req
	for attempt := 0; ; attempt++ {
		resp, err := t.once(r)
		if attempt >= t.retries || !replayable || ctx.Err() != nil {
			return resp, err
		}
		wait, retry := t.backoff(attempt, resp, err)
		if !retry {
			return resp, err
		}
		status := 0
		if resp != nil {
			status = resp.StatusCode
			io.Copy(io.Discard, io.LimitReader(resp.Body, errorPeek))
			resp.Body.Close()
		}
		t.log.WarnContext(ctx, "gemini: retrying request", "status", status, "err", err, "attempt", attempt+1, "wait", wait)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, context.Cause(ctx)
		case <-timer.C:
		}
		r = req.Clone(ctx)
		if req.GetBody != nil {
			if r.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
	}
}

// once sends one attempt under the per-attempt timeout, which lasts until
// the response body is closed.
func (t *retryTransport) once(req *http.Request) (*http.Response, error) {
	if t.timeout <= 0 {
		return t.base.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// backoff says whether to retry after this attempt and how long to wait.
func (t *retryTransport) backoff(attempt int, resp *http.Response, err error) (time.Duration, bool) {
	if err != nil {
		return jitter(attempt), true
	}
	switch resp.StatusCode {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
	default:
		return 0, false
	}
	if d, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
		return d, d <= retryAfterMax
	}
	if d, ok := retryInfo(resp); ok {
		return d, d <= retryAfterMax
	}
	return jitter(attempt), true
}

// jitter returns a random wait in [b/2, b) for b = retryBase * 2^attempt,
// capped at retryCap.
func jitter(attempt int) time.Duration {
	b := retryCap
	if attempt < 16 {
		b = min(retryBase<<attempt, retryCap)
	}
	return b/2 + rand.N(b/2)
}

// retryAfter parses a Retry-After value: delay-seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
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

// retryInfo reads the retry delay from a Google API error body,
//
//	{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"}]}}
//
// and puts the body back for the caller.
func retryInfo(resp *http.Response) (time.Duration, bool) {
	peek, err := io.ReadAll(io.LimitReader(resp.Body, errorPeek))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(peek), resp.Body), resp.Body}
	if err != nil {
		return 0, false
	}
	var body struct {
		Error struct {
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(peek, &body) != nil {
		return 0, false
	}
	for _, d := range body.Error.Details {
		if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
			if v, err := time.ParseDuration(d.RetryDelay); err == nil && v >= 0 {
				return v, true
			}
		}
	}
	return 0, false
}
