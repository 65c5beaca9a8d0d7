// Package geminitest is a scripted fake of Gemini's generateContent REST
// endpoint, for tests of code that drives a gemini.Model: it answers each
// POST /v1beta/models/{model}:generateContent with the next scripted reply,
// in the API's real JSON shape, and records every request.
//
//	srv := geminitest.NewServer(t,
//		geminitest.Turn{Calls: []geminitest.Call{{ID: "c1", Name: "click", Args: map[string]any{"x": 500, "y": 500}}}}.Reply(),
//		geminitest.Text("done"),
//	)
//	m, err := gemini.New(gemini.Config{APIKey: "test", BaseURL: srv.URL, Model: "gemini-3.5-flash"})
package geminitest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"

	"google.golang.org/genai"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/internal/inproc"
)

// Call is one functionCall part of a scripted model turn.
type Call struct {
	ID   string // functionCall id; empty leaves it out, as older models do
	Name string
	// Args are the call's arguments; nil leaves "args" out, as Gemini does
	// for a call without arguments (list_tabs), and an empty map sends {}.
	Args map[string]any
	// ThoughtSignature, if set, is sent base64-encoded in the part's
	// thoughtSignature, which the client must echo back unchanged.
	ThoughtSignature []byte
}

// CallOf writes a canonical action, in 1000x1000 grid coordinates, as the
// function call of set that performs it (see gemini.EncodeCall).
func CallOf(set gemini.FunctionSet, id string, a actions.Action) (Call, error) {
	name, args, err := gemini.EncodeCall(set, a)
	if err != nil {
		return Call{}, err
	}
	return Call{ID: id, Name: name, Args: args}, nil
}

// Usage is a turn's usageMetadata.
type Usage struct {
	Prompt, Candidates, Cached, Thoughts int
}

// Turn is a scripted model turn: optional thought summary and text, then
// function calls.
type Turn struct {
	Thought      string // a part with "thought": true
	Text         string
	Calls        []Call
	FinishReason string // default "STOP"
	Usage        Usage  // zero means {Prompt: 1000, Candidates: 20}
}

// Reply is one scripted HTTP response.
type Reply struct {
	Status int // 0 means 200
	Header http.Header
	Body   []byte
	err    error // the script itself is broken
}

// Reply returns t as a generateContent response.
func (t Turn) Reply() Reply {
	var parts []map[string]any
	if t.Thought != "" {
		parts = append(parts, map[string]any{"text": t.Thought, "thought": true})
	}
	if t.Text != "" {
		parts = append(parts, map[string]any{"text": t.Text})
	}
	for _, c := range t.Calls {
		fc := map[string]any{"name": c.Name}
		if c.Args != nil {
			fc["args"] = c.Args
		}
		if c.ID != "" {
			fc["id"] = c.ID
		}
		p := map[string]any{"functionCall": fc}
		if len(c.ThoughtSignature) > 0 {
			p["thoughtSignature"] = c.ThoughtSignature // []byte marshals as base64
		}
		parts = append(parts, p)
	}
	u := t.Usage
	if u == (Usage{}) {
		u = Usage{Prompt: 1000, Candidates: 20}
	}
	usage := map[string]any{
		"promptTokenCount":     u.Prompt,
		"candidatesTokenCount": u.Candidates,
		"totalTokenCount":      u.Prompt + u.Candidates + u.Thoughts,
	}
	if u.Cached > 0 {
		usage["cachedContentTokenCount"] = u.Cached
	}
	if u.Thoughts > 0 {
		usage["thoughtsTokenCount"] = u.Thoughts
	}
	finish := t.FinishReason
	if finish == "" {
		finish = "STOP"
	}
	body := map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": finish,
			"index":        0,
		}},
		"usageMetadata": usage,
		"modelVersion":  "geminitest",
		"responseId":    "geminitest-response",
	}
	return JSON(http.StatusOK, body)
}

// Text is a final model turn with only text.
func Text(text string) Reply { return Turn{Text: text}.Reply() }

// Error is a Google API error response, such as Error(429,
// "RESOURCE_EXHAUSTED", "quota", "2") with a Retry-After of 2 seconds
// (empty for none).
func Error(code int, status, message, retryAfter string) Reply {
	r := JSON(code, map[string]any{"error": map[string]any{"code": code, "message": message, "status": status}})
	if retryAfter != "" {
		r.Header.Set("Retry-After", retryAfter)
	}
	return r
}

// JSON is a reply with v marshalled as its body.
// If v cannot be marshalled, serving the reply fails the test.
func JSON(status int, v any) Reply {
	b, err := json.Marshal(v)
	return Reply{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: b, err: err}
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string // e.g. "/v1beta/models/gemini-3.5-flash:generateContent"
	Model  string // from the path
	Header http.Header
	Body   []byte
}

// Contents decodes the request's contents.
func (r Request) Contents() ([]*genai.Content, error) {
	var body struct {
		Contents []*genai.Content `json:"contents"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return nil, fmt.Errorf("geminitest: decode request: %w", err)
	}
	return body.Contents, nil
}

// FunctionResponses returns the function responses of the request's last
// content, in order.
func (r Request) FunctionResponses() ([]*genai.FunctionResponse, error) {
	cs, err := r.Contents()
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, nil
	}
	var out []*genai.FunctionResponse
	for _, p := range cs[len(cs)-1].Parts {
		if p != nil && p.FunctionResponse != nil {
			out = append(out, p.FunctionResponse)
		}
	}
	return out, nil
}

// Server is a fake Gemini API. Its URL goes in gemini.Config.BaseURL.
type Server struct {
	URL string

	t       T
	mu      sync.Mutex
	replies []Reply
	reqs    []Request
}

// T is the part of testing.TB the server uses; a *testing.T satisfies it.
type T interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
}

var generatePath = regexp.MustCompile(`^/v1beta/models/([^/:]+):generateContent$`)

// NewServer starts a server that answers with replies in order; it is
// closed when the test ends. A request that is not a well-formed
// generateContent call, or one beyond the script, fails the test and gets a
// 400 error.
func NewServer(t T, replies ...Reply) *Server {
	t.Helper()
	s := &Server{t: t, replies: replies}
	hs := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(hs.Close)
	s.URL = hs.URL + "/"
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, "read request body: %v", err)
		return
	}
	m := generatePath.FindStringSubmatch(r.URL.Path)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if m != nil {
		req.Model = m[1]
	}
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, req)
	var reply Reply
	ok := n < len(s.replies)
	if ok {
		reply = s.replies[n]
	}
	s.mu.Unlock()

	switch {
	case r.Method != http.MethodPost || m == nil:
		s.fail(w, "request %d: %s %s, want POST /v1beta/models/{model}:generateContent", n, r.Method, r.URL.Path)
		return
	case r.Header.Get("x-goog-api-key") == "":
		s.fail(w, "request %d: no x-goog-api-key header", n)
		return
	case !json.Valid(body):
		s.fail(w, "request %d: body is not JSON", n)
		return
	case !ok:
		s.fail(w, "request %d: unexpected: the script has %d replies", n, len(s.replies))
		return
	case reply.err != nil:
		s.fail(w, "reply %d: marshal: %v", n, reply.err)
		return
	}
	for k, v := range reply.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(cmp.Or(reply.Status, http.StatusOK))
	w.Write(reply.Body)
}

func (s *Server) fail(w http.ResponseWriter, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.t.Errorf("geminitest: %s", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": 400, "message": msg, "status": "INVALID_ARGUMENT"}})
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Transport returns a RoundTripper that serves requests in-process from
// the same script, without the network, so that a Model can use the fake
// inside a testing/synctest bubble: set it as the Transport of
// gemini.Config.HTTPClient (BaseURL still needs to be s.URL or any URL).
func (s *Server) Transport() http.RoundTripper { return inproc.Transport(http.HandlerFunc(s.serve)) }
