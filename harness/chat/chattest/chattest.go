// Package chattest is a scripted fake of an OpenAI-compatible Chat
// Completions server (as vLLM, Ollama and LM Studio run one) for tests: an
// httptest server on 127.0.0.1 that answers POST /v1/chat/completions with
// scripted replies in the real JSON shape, records every request, and
// checks that each tool call it handed out is answered, by tool_call_id,
// in the next request.
//
//	srv := chattest.NewServer(t,
//		chattest.UITARS("The button is at the top.", "click(start_box='<|box_start|>(120,48)<|box_end|>')"),
//		chattest.UITARS("Done.", "finished(content='ok')"),
//	)
//	m, err := chat.New(chat.Config{BaseURL: srv.URL, Model: "ui-tars-1.5-7b"})
package chattest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/chat"
	"github.com/spotter-harness/spotter/harness/internal/inproc"
	"github.com/spotter-harness/spotter/harness/openai"
)

// Reply is one scripted answer: a completion, or an HTTP error.
type Reply struct {
	Content   string     // the assistant message's content
	ToolCalls []ToolCall // the message's tool_calls
	// Reasoning is sent as reasoning_content, as vLLM's reasoning parsers
	// do; clients ignore it.
	Reasoning string
	// Finish is the finish_reason: default "tool_calls" if there are tool
	// calls, else "stop". "length" means the reply was cut short.
	Finish string
	Usage  Usage

	// Body, if set, is sent as the whole response body (status 200), for
	// replies in shapes the fields above cannot make.
	Body json.RawMessage

	// Code, if not zero, makes the reply an HTTP error with this status
	// and an OpenAI-style error body saying Message. Header is sent with
	// it (e.g. Retry-After). The request is expected again.
	Code    int
	Message string
	Header  http.Header
}

// ToolCall is one function call of a reply.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // the JSON string the model wrote; it need not be valid
}

// Usage is a completion's token counts.
type Usage struct {
	Prompt, Cached, Completion int
}

// Text is a reply with only text, as a model ending its task writes.
func Text(content string) Reply { return Reply{Content: content} }

// UITARS is a UI-TARS reply: "Thought: <thought>\nAction: <actions>", the
// actions separated by blank lines, each in UI-TARS's syntax, such as
// "click(start_box='<|box_start|>(120,48)<|box_end|>')".
func UITARS(thought string, actions ...string) Reply {
	return Reply{Content: "Thought: " + thought + "\nAction: " + strings.Join(actions, "\n\n")}
}

// UITARSActions is a UI-TARS reply with canonical actions written by
// chat.FormatUITARS; their coordinates must already be in the model's
// space (smart-resized pixels for UI-TARS 1.5, 0..1000 for 1.0). An action
// UI-TARS cannot express fails t.
func UITARSActions(t TB, thought string, as ...actions.Action) Reply {
	t.Helper()
	texts := make([]string, len(as))
	for i, a := range as {
		s, err := chat.FormatUITARS(a)
		if err != nil {
			t.Fatalf("chattest.UITARSActions: %v", err)
		}
		texts[i] = s
	}
	return UITARS(thought, texts...)
}

// Calls is a reply that calls functions, with optional text.
func Calls(content string, calls ...ToolCall) Reply {
	return Reply{Content: content, ToolCalls: calls}
}

// Computer is a call of the computer function with the given arguments,
// e.g. `{"type":"click","x":10,"y":20}`.
func Computer(id, arguments string) ToolCall {
	return ToolCall{ID: id, Name: chat.ComputerFunction, Arguments: arguments}
}

// ComputerAction is a call of the computer function performing a, written
// by openai.EncodeAction. An action that cannot be encoded fails t.
func ComputerAction(t TB, id string, a actions.Action) ToolCall {
	t.Helper()
	raw, err := openai.EncodeAction(a)
	if err != nil {
		t.Fatalf("chattest.ComputerAction: %v", err)
	}
	return Computer(id, string(raw))
}

// Request is one request the server received.
type Request struct {
	Header http.Header
	Body   json.RawMessage
}

// Message is one message of a request, as sent.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"` // a string or a list of parts
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls,omitempty"`
}

// Part is one part of a message's content list.
type Part struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url,omitempty"`
}

// Messages decodes the request's messages.
func (r Request) Messages() ([]Message, error) {
	var body struct {
		Messages []Message `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return nil, fmt.Errorf("chattest: request body: %v", err)
	}
	return body.Messages, nil
}

// Parts returns the content of m as parts: a string content is one text
// part.
func (m Message) Parts() ([]Part, error) {
	c := strings.TrimSpace(string(m.Content))
	switch {
	case c == "" || c == "null":
		return nil, nil
	case c[0] == '"':
		var s string
		if err := json.Unmarshal(m.Content, &s); err != nil {
			return nil, err
		}
		return []Part{{Type: "text", Text: s}}, nil
	}
	var parts []Part
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return nil, fmt.Errorf("chattest: content of a %s message: %v", m.Role, err)
	}
	return parts, nil
}

// Images returns the image URLs of the request, in order.
func (r Request) Images() ([]string, error) {
	msgs, err := r.Messages()
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, m := range msgs {
		parts, err := m.Parts()
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			if p.ImageURL != nil {
				urls = append(urls, p.ImageURL.URL)
			}
		}
	}
	return urls, nil
}

// TB is the part of testing.TB that the server uses.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Server is the fake endpoint. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to put in chat.Config.BaseURL.
	URL string

	t        TB
	mu       sync.Mutex
	replies  []Reply
	next     int
	requests []Request
	issued   []string // tool call ids of the last reply, to be answered next
	text     bool     // the last reply was text only: the next request must end with a user message
}

// NewServer starts a fake that answers the i-th completion request with
// replies[i]; an HTTP error reply answers one request, so a client's retry
// gets the reply after it. A request beyond the script fails the test. The server is closed when the test ends, and
// t.Cleanup also fails the test if replies were left unused.
func NewServer(t TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{t: t, replies: replies}
	ts := httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = ts.URL + "/v1/"
	t.Cleanup(func() {
		ts.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.next < len(s.replies) {
			t.Errorf("chattest: %d of %d scripted replies were never requested", len(s.replies)-s.next, len(s.replies))
		}
	})
	return s
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.t.Errorf("chattest: unexpected request %s %s", r.Method, r.URL.Path)
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("chattest: read request: %v", err)
		writeError(w, http.StatusBadRequest, "unreadable body")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.requests)
	req := Request{Header: r.Header.Clone(), Body: body}
	s.requests = append(s.requests, req)
	if s.next >= len(s.replies) {
		s.t.Errorf("chattest: request %d is beyond the %d scripted replies", n, len(s.replies))
		writeError(w, http.StatusInternalServerError, "no more scripted replies")
		return
	}
	reply := s.replies[s.next]
	s.next++
	var head struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(body, &head); err != nil || head.Model == "" {
		s.t.Errorf("chattest: request %d is not a chat completion request with a model: %.80s", n, body)
	}
	msgs, err := req.Messages()
	if err != nil {
		s.t.Errorf("chattest: request %d: %v", n, err)
	}
	if reply.Code != 0 {
		for k, v := range reply.Header {
			w.Header()[k] = v
		}
		writeError(w, reply.Code, cmpOr(reply.Message, http.StatusText(reply.Code)))
		return
	}
	s.check(n, msgs)
	s.issued = s.issued[:0]
	for _, c := range reply.ToolCalls {
		s.issued = append(s.issued, c.ID)
	}
	s.text = len(reply.ToolCalls) == 0 && reply.Body == nil
	w.Header().Set("Content-Type", "application/json")
	if reply.Body != nil {
		_, _ = w.Write(reply.Body)
		return
	}
	if err := json.NewEncoder(w).Encode(completion(fmt.Sprintf("chatcmpl-%03d", n), head.Model, reply)); err != nil {
		s.t.Errorf("chattest: write response %d: %v", n, err)
	}
}

// check checks that msgs answer the last reply: each tool call it issued
// by exactly one tool message, every tool message pairing with a call of
// an assistant message, and after a text reply, a user message last.
func (s *Server) check(n int, msgs []Message) {
	if len(msgs) == 0 {
		s.t.Errorf("chattest: request %d has no messages", n)
		return
	}
	calls := map[string]bool{}
	answers := map[string]int{}
	for i, m := range msgs {
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
		if m.Role == "tool" {
			answers[m.ToolCallID]++
			if !calls[m.ToolCallID] {
				s.t.Errorf("chattest: request %d: message %d answers tool call %q, which no earlier assistant message made", n, i, m.ToolCallID)
			}
		}
	}
	for _, id := range s.issued {
		if answers[id] != 1 {
			s.t.Errorf("chattest: request %d answers tool call %q %d times, want once", n, id, answers[id])
		}
	}
	if s.text && n > 0 && msgs[len(msgs)-1].Role != "user" {
		s.t.Errorf("chattest: request %d ends with a %s message, want a user message after the model's reply", n, msgs[len(msgs)-1].Role)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	typ := "BadRequestError"
	switch {
	case code == http.StatusTooManyRequests:
		typ = "RateLimitError"
	case code >= 500:
		typ = "InternalServerError"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": code,
	}})
}

// completion is a chat completion object as vLLM writes one.
func completion(id, model string, r Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": r.Content, "tool_calls": []any{}}
	if len(r.ToolCalls) > 0 {
		calls := make([]any, len(r.ToolCalls))
		for i, c := range r.ToolCalls {
			calls[i] = map[string]any{
				"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments},
			}
		}
		msg["tool_calls"] = calls
		if r.Content == "" {
			msg["content"] = nil
		}
	}
	if r.Reasoning != "" {
		msg["reasoning_content"] = r.Reasoning
	}
	finish := r.Finish
	if finish == "" {
		finish = "stop"
		if len(r.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	return map[string]any{
		"id":      id,
		"object":  "chat.completion",
		"created": 1767225600,
		"model":   model,
		"choices": []any{map[string]any{
			"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish, "stop_reason": nil,
		}},
		"usage": map[string]any{
			"prompt_tokens":         r.Usage.Prompt,
			"completion_tokens":     r.Usage.Completion,
			"total_tokens":          r.Usage.Prompt + r.Usage.Completion,
			"prompt_tokens_details": map[string]any{"cached_tokens": r.Usage.Cached},
		},
		"prompt_logprobs": nil,
	}
}

// Transport returns a RoundTripper that serves requests in-process from
// the same script, without the network, so that a Model can use the fake
// inside a testing/synctest bubble, where the waits a Retry-After asks for
// take no real time: set it as the Transport of chat.Config.HTTPClient
// (BaseURL stays s.URL).
func (s *Server) Transport() http.RoundTripper { return inproc.Transport(http.HandlerFunc(s.serve)) }
