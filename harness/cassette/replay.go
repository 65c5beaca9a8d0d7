package cassette

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrMismatch marks a request that did not match the recorded one, or came
// when no interaction was left.
var ErrMismatch = errors.New("request does not match the cassette")

// ErrUnplayed marks interactions that were never asked for.
var ErrUnplayed = errors.New("interactions not played")

// Mismatch is a request the Player refused.
type Mismatch struct {
	Request     int      // the request's index among those the Player received
	Interaction int      // the interaction it was checked against; len(Interactions) if none was left
	Method, URL string   // the request
	Diffs       []string // what differs, one line each: "model: got \"a\", want \"b\""
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("cassette: request %d (%s %s) does not match interaction %d: %s",
		m.Request, m.Method, m.URL, m.Interaction, strings.Join(m.Diffs, "; "))
}

// Is makes errors.Is(m, ErrMismatch) true.
func (m *Mismatch) Is(target error) bool { return target == ErrMismatch }

// Player answers requests with a cassette's responses, in order, checking
// each request against the recorded one (see the package doc). It is an
// http.RoundTripper and an http.Handler, and is safe for concurrent use,
// though a conversation's requests come one at a time.
type Player struct {
	c *Cassette

	mu         sync.Mutex
	next       int // the interaction to answer next
	requests   int // requests received
	mismatches []*Mismatch
}

// NewPlayer returns a Player for c, which it does not change.
func NewPlayer(c *Cassette) *Player { return &Player{c: c.clone()} }

// Open loads the cassette at path and returns a Player for it.
func Open(path string) (*Player, error) {
	c, err := Load(path)
	if err != nil {
		return nil, err
	}
	return NewPlayer(c), nil
}

// Client returns an HTTP client that sends every request to p in memory,
// whatever its URL: give it to an adapter (Config.HTTPClient) and keep the
// adapter's usual base URL, so the paths are those recorded.
func (p *Player) Client() *http.Client { return &http.Client{Transport: p} }

// RoundTrip answers r in memory.
func (p *Player) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := readBody(r.Body)
	if err != nil {
		return nil, fmt.Errorf("cassette: read request body: %w", err)
	}
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	status, header, respBody := p.answer(r, body)
	header.Set("Content-Length", strconv.Itoa(len(respBody)))
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          io.NopCloser(bytes.NewReader(respBody)),
		ContentLength: int64(len(respBody)),
		Request:       r,
	}, nil
}

// ServeHTTP answers r.
func (p *Player) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r.Body)
	if err != nil {
		http.Error(w, "cassette: read request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	status, header, respBody := p.answer(r, body)
	for k, vs := range header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(respBody)))
	w.WriteHeader(status)
	_, _ = w.Write(respBody) // the client went away: nothing to do
}

// answer checks r against the next interaction and returns what to send.
func (p *Player) answer(r *http.Request, body []byte) (int, http.Header, []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.requests
	p.requests++
	m := &Mismatch{Request: n, Interaction: p.next, Method: r.Method, URL: r.URL.RequestURI()}
	if p.next >= len(p.c.Interactions) {
		m.Diffs = []string{fmt.Sprintf("no interaction left: all %d were played", len(p.c.Interactions))}
	} else {
		m.Diffs = diff(p.c.Interactions[p.next].Request, r.Method, r.URL, body)
	}
	if len(m.Diffs) > 0 {
		p.mismatches = append(p.mismatches, m)
		return mismatchResponse(m)
	}
	rs := p.c.Interactions[p.next].Response
	p.next++
	h := http.Header{}
	for k, v := range rs.Header {
		h.Set(k, v)
	}
	if h.Get("Content-Type") == "" && len(rs.JSON) > 0 {
		h.Set("Content-Type", "application/json")
	}
	return rs.Status, h, rs.Bytes()
}

// mismatchResponse is a 400 whose error object Anthropic's ("type",
// "error.type", "error.message"), OpenAI's ("error.message", "error.type")
// and Gemini's ("error.message", "error.status") SDKs all read.
func mismatchResponse(m *Mismatch) (int, http.Header, []byte) {
	body, err := json.Marshal(map[string]any{
		"type": "error",
		"error": map[string]any{
			"type":   "cassette_mismatch",
			"status": "INVALID_ARGUMENT",
			// First what differs: SDKs and adapters may clip messages.
			"message": fmt.Sprintf("%s (cassette request %d, %s %s, interaction %d)",
				strings.Join(m.Diffs, "; "), m.Request, m.Method, m.URL, m.Interaction),
			"diffs": m.Diffs,
		},
	})
	if err != nil { // strings only: cannot happen
		body = []byte(`{"type":"error","error":{"type":"cassette_mismatch","message":"cassette: mismatch"}}`)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Should-Retry", "false")
	return http.StatusBadRequest, h, body
}

// Mismatches returns the requests refused so far.
func (p *Player) Mismatches() []*Mismatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*Mismatch(nil), p.mismatches...)
}

// Played returns how many interactions have been answered.
func (p *Player) Played() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next
}

// Err reports every mismatch and, wrapping ErrUnplayed, any interaction
// never asked for. Call it when the run is over: nil means the run made
// exactly the recorded requests.
func (p *Player) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, m := range p.mismatches {
		errs = append(errs, m)
	}
	if left := len(p.c.Interactions) - p.next; left > 0 {
		errs = append(errs, fmt.Errorf("cassette: %w: %d of %d, from interaction %d", ErrUnplayed, left, len(p.c.Interactions), p.next))
	}
	return errors.Join(errs...)
}

// Serve listens on a free port of 127.0.0.1 and answers with p until ctx
// is done or stop is called. It returns the base URL ("http://127.0.0.1:N")
// and stop, which shuts the server down and waits for it; the caller must
// call stop.
func (p *Player) Serve(ctx context.Context) (baseURL string, stop func(), err error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("cassette: listen: %w", err)
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // returns ErrServerClosed after Shutdown; the listener is ours
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx) // on timeout, Close below ends the rest
			srv.Close()
			<-done
		})
	}
	context.AfterFunc(ctx, stop) // after an earlier stop, a no-op
	return "http://" + ln.Addr().String(), stop, nil
}
