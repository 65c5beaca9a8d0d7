package cassette

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// MaxBodyBytes bounds a body the Recorder reads; a larger one fails the
// round trip.
const MaxBodyBytes = 64 << 20

// Recorder is an http.RoundTripper that sends each request on through Next
// and records the exchange, secrets stripped (see the package doc).
// Set its fields before the first request and do not copy it after. It is
// safe for concurrent use; interactions are recorded in the order their
// responses complete.
//
// The Recorder reads each response body to the end before it returns it,
// so a streamed response reaches the caller only once it is complete.
type Recorder struct {
	// Next sends the requests; nil means http.DefaultTransport.
	Next http.RoundTripper
	// Path is where the cassette is written after each interaction (a
	// ".gz" suffix gzips it); empty keeps it in memory only (see
	// Cassette).
	Path string
	// Secrets are values to redact wherever they appear: the API keys in
	// use. The credentials a request carries (SecretHeaders,
	// SecretParams) are redacted without being listed here.
	Secrets []string
	// Header names further headers to keep in requests and responses.
	// SecretHeaders are never kept.
	Header []string
	// Comment is written at the top of the cassette.
	Comment string

	mu      sync.Mutex
	secrets secrets
	c       Cassette
}

// RoundTrip sends r through Next, records the exchange and returns the
// response. If the cassette cannot be written, the response is discarded
// and RoundTrip fails: a recording with holes would replay wrongly.
func (rec *Recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := readBody(r.Body)
	if err != nil {
		return nil, fmt.Errorf("cassette: read request body: %w", err)
	}
	out := r.Clone(r.Context())
	out.Body, out.ContentLength = http.NoBody, 0
	if len(body) > 0 {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	next := rec.Next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("cassette: read response body: %w", err)
	}
	if len(respBody) > MaxBodyBytes {
		return nil, fmt.Errorf("cassette: response body of %s %s is over %d bytes", r.Method, r.URL.Path, MaxBodyBytes)
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))

	if err := rec.add(r, body, resp, respBody); err != nil {
		return nil, err
	}
	return resp, nil
}

// add records one exchange and writes the cassette.
func (rec *Recorder) add(r *http.Request, body []byte, resp *http.Response, respBody []byte) error {
	stored, encoded := respBody, false
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		if b, err := gunzip(respBody); err == nil {
			stored = b
		} else {
			encoded = true // not what it says: keep it as it came, header and all
		}
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, s := range rec.Secrets {
		rec.secrets.add(s, true)
	}
	rec.secrets.fromRequest(r)
	s := rec.secrets

	m := MatchBody(body)
	m.Model = s.redactString(m.Model)
	for i, id := range m.Answers {
		m.Answers[i] = s.redactString(id)
	}
	it := Interaction{
		Request: Request{
			Method:  r.Method,
			URL:     s.scrubURL(r.URL),
			Header:  s.keepHeaders(r.Header, rec.keepRequest),
			Match:   &m,
			Payload: newPayload(s.redact(stripImages(body, MinImageChars))),
		},
		Response: Response{
			Status:  resp.StatusCode,
			Header:  s.keepHeaders(resp.Header, rec.keepResponse),
			Payload: newPayload(s.redact(stored)),
		},
	}
	if encoded {
		if it.Response.Header == nil {
			it.Response.Header = map[string]string{}
		}
		it.Response.Header["content-encoding"] = resp.Header.Get("Content-Encoding")
	}
	rec.c.Version = Version
	rec.c.Comment = rec.Comment
	rec.c.Interactions = append(rec.c.Interactions, it)
	if rec.Path == "" {
		return nil
	}
	if err := rec.c.Write(rec.Path); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	return nil
}

func (rec *Recorder) keepRequest(name string) bool {
	return slices.Contains(RequestHeaders, name) || rec.extra(name)
}

func (rec *Recorder) keepResponse(name string) bool {
	if slices.Contains(ResponseHeaders, name) || rec.extra(name) {
		return true
	}
	for _, p := range ResponseHeaderPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func (rec *Recorder) extra(name string) bool {
	return slices.ContainsFunc(rec.Header, func(h string) bool { return strings.EqualFold(h, name) })
}

// Cassette returns a copy of what has been recorded so far.
func (rec *Recorder) Cassette() *Cassette {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	c := rec.c.clone()
	c.Version = Version
	return c
}

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return io.ReadAll(io.LimitReader(zr, MaxBodyBytes))
}
