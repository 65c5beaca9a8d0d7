// Package anthropictest is a scripted fake of Anthropic's Messages API for
// tests: it answers each request with the next scripted reply, in the API's
// real response shape, and records the requests it received.
//
//	srv := anthropictest.NewServer(t,
//		anthropictest.Reply{Content: []json.RawMessage{
//			anthropictest.Text("Clicking the button."),
//			anthropictest.Action(t, "toolu_1", anthropic.Computer20250124, click),
//		}},
//		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}},
//	)
//	m, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "test", ...})
//
// New makes the same fake without a listener; its Client sends requests to
// it in memory, which works inside a testing/synctest bubble.
package anthropictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/internal/inproc"
)

// Reply is one scripted response.
type Reply struct {
	// Content holds the assistant's content blocks as the API sends them;
	// build them with Text, ToolUse and Action.
	Content []json.RawMessage
	// Stop is the stop_reason; default "tool_use" if Content has a
	// tool_use block, else "end_turn".
	Stop string
	// StopDetails is the stop_details object of a refusal, e.g.
	// {"category":"cyber","explanation":"..."}; default null.
	StopDetails json.RawMessage
	// Usage is the usage object; default a small fixed count.
	Usage *Usage

	// Status, if not 0 or 200, makes this reply an API error with that
	// HTTP status, ErrorType (default "api_error") and Message.
	Status    int
	ErrorType string
	Message   string
	// Header is added to the response, e.g. {"retry-after": "1"}.
	Header map[string]string
	// Delay holds the reply back, or until the request is cancelled.
	Delay time.Duration
}

// Usage is the API's usage object.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// Request is a request the fake received.
type Request struct {
	Method string
	Path   string // with the query, "/v1/messages?beta=true"
	Header http.Header
	Body   json.RawMessage
}

// TB is the part of testing.TB the fake uses; a *testing.T is one.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Server is the fake. Its methods may be called from any goroutine.
type Server struct {
	// URL is the base URL of NewServer's listener, for Config.BaseURL;
	// empty for New.
	URL string

	t       TB
	mu      sync.Mutex
	replies []Reply
	reqs    []Request
}

// New returns a fake that replies with replies in order, without a
// listener: use Client as the model's HTTP client (with any BaseURL). A
// request after the last reply fails the test and gets a 500.
func New(t TB, replies ...Reply) *Server {
	return &Server{t: t, replies: replies}
}

// NewServer is New with an httptest server on 127.0.0.1, closed when the
// test ends; its URL is in URL.
func NewServer(t TB, replies ...Reply) *Server {
	s := New(t, replies...)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// Client returns an HTTP client that delivers every request to s in
// memory, whatever its URL.
func (s *Server) Client() *http.Client {
	return &http.Client{Transport: inproc.Transport(s)}
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Add appends replies to the script.
func (s *Server) Add(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// ServeHTTP answers POST /v1/messages with the next reply.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
	var reply Reply
	ok := len(s.replies) > 0
	if ok {
		reply, s.replies = s.replies[0], s.replies[1:]
	}
	s.mu.Unlock()

	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		s.t.Errorf("anthropictest: request %d: %s %s, want POST /v1/messages", n, r.Method, r.URL.Path)
		writeError(w, http.StatusNotFound, "not_found_error", "not found")
		return
	}
	var req struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		s.t.Errorf("anthropictest: request %d: body is not JSON: %v", n, err)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "body is not JSON")
		return
	}
	if !ok {
		s.t.Errorf("anthropictest: request %d: no reply left in the script", n)
		w.Header().Set("x-should-retry", "false")
		writeError(w, http.StatusInternalServerError, "api_error", "no scripted reply left")
		return
	}
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	w.Header().Set("request-id", fmt.Sprintf("req_fake_%03d", n))
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply.Status, cmpOr(reply.ErrorType, "api_error"), cmpOr(reply.Message, http.StatusText(reply.Status)))
		return
	}
	writeJSON(w, http.StatusOK, message(n, req.Model, reply))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// message is a reply in the API's response shape.
func message(n int, model string, r Reply) map[string]any {
	content := r.Content
	if content == nil {
		content = []json.RawMessage{}
	}
	stop := r.Stop
	if stop == "" {
		stop = "end_turn"
		for _, c := range content {
			var b struct{ Type string }
			if json.Unmarshal(c, &b) == nil && b.Type == "tool_use" {
				stop = "tool_use"
			}
		}
	}
	u := Usage{InputTokens: 1000, OutputTokens: 50}
	if r.Usage != nil {
		u = *r.Usage
	}
	details := r.StopDetails
	if details == nil {
		details = json.RawMessage("null")
	}
	return map[string]any{
		"id":            fmt.Sprintf("msg_fake_%03d", n),
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"stop_details":  details,
		"usage":         u,
	}
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"type":"error","error":{"type":"api_error","message":"fake: bad reply"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b) // the client went away: nothing to do
}

// Text is a text content block.
func Text(s string) json.RawMessage {
	return mustJSON(map[string]string{"type": "text", "text": s})
}

// ToolUse is a tool_use content block calling tool name with input, which
// is marshalled unless it is already a json.RawMessage.
func ToolUse(id, name string, input any) json.RawMessage {
	raw, ok := input.(json.RawMessage)
	if !ok {
		raw = mustJSON(input)
	}
	return mustJSON(map[string]any{"type": "tool_use", "id": id, "name": name, "input": raw})
}

// Action is a computer tool_use block asking for a, written for tool
// version v with anthropic.EncodeAction. It fails the test if a has no
// form in v.
func Action(t TB, id string, v anthropic.ToolVersion, a actions.Action) json.RawMessage {
	t.Helper()
	in, err := anthropic.EncodeAction(v, a)
	if err != nil {
		t.Fatalf("anthropictest.Action(%q, %s, %v): %v", id, v, a, err)
	}
	return ToolUse(id, anthropic.ToolName, in)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Only values that cannot be JSON get here: a test's mistake.
		return json.RawMessage(fmt.Sprintf(`{"type":"text","text":%q}`, "anthropictest: "+err.Error()))
	}
	return bytes.TrimSpace(b)
}

// ToolResult is a tool_result block a request sent.
type ToolResult struct {
	ToolUseID string
	IsError   bool
	Text      string   // the text blocks, joined by newlines
	Images    []string // the media types of the image blocks
}

// ToolResults returns the tool_result blocks of the last message of a
// request body, in order: the answers to the previous turn's calls.
func ToolResults(body json.RawMessage) ([]ToolResult, error) {
	var req struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("anthropictest: request body: %w", err)
	}
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("anthropictest: the request has no messages")
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != "user" {
		return nil, fmt.Errorf("anthropictest: the last message is %q, want user", last.Role)
	}
	var out []ToolResult
	for i, c := range last.Content {
		var b struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
			IsError   bool   `json:"is_error"`
			Content   []struct {
				Type   string `json:"type"`
				Text   string `json:"text"`
				Source struct {
					MediaType string `json:"media_type"`
				} `json:"source"`
			} `json:"content"`
		}
		if err := json.Unmarshal(c, &b); err != nil {
			return nil, fmt.Errorf("anthropictest: block %d: %w", i, err)
		}
		if b.Type != "tool_result" {
			continue
		}
		r := ToolResult{ToolUseID: b.ToolUseID, IsError: b.IsError}
		var texts []string
		for _, p := range b.Content {
			switch p.Type {
			case "text":
				texts = append(texts, p.Text)
			case "image":
				r.Images = append(r.Images, p.Source.MediaType)
			}
		}
		r.Text = strings.Join(texts, "\n")
		out = append(out, r)
	}
	return out, nil
}
