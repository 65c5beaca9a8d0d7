// Package openaitest is a scripted fake of the OpenAI Responses API for
// tests: an httptest server that answers POST /v1/responses with scripted
// replies in the API's real JSON shape, records every request, and checks
// that each call it handed out is answered, by call_id, in the next request.
//
//	srv := openaitest.NewServer(t,
//		openaitest.Reply{Output: []json.RawMessage{
//			openaitest.ComputerCall("call_1", `{"type":"click","x":10,"y":20}`),
//		}},
//		openaitest.Reply{Output: []json.RawMessage{openaitest.Message("done")}},
//	)
//	m, err := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "test"})
package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/internal/inproc"
	"github.com/spotter-harness/spotter/harness/openai"
)

// Reply is one scripted answer: a response, or an HTTP error.
type Reply struct {
	Output []json.RawMessage // output items, e.g. from ComputerCall and Message
	// Status is the response status: "completed" (default), "incomplete"
	// or "failed".
	Status string
	// Incomplete is incomplete_details.reason for an incomplete response,
	// such as "max_output_tokens".
	Incomplete string
	Usage      Usage

	// Code, if not zero, makes the reply an HTTP error with this status
	// and an OpenAI error body saying Message. Header is sent with it
	// (e.g. Retry-After).
	Code    int
	Message string
	Header  http.Header
}

// Usage is a response's token counts.
type Usage struct {
	Input, Cached, Output int
}

// Request is one request the server received.
type Request struct {
	Header http.Header
	Body   json.RawMessage
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
	// URL is the base URL to put in openai.Config.BaseURL.
	URL string

	t        TB
	mu       sync.Mutex
	replies  []Reply
	next     int
	requests []Request
	issued   []string // call ids of the last reply, to be answered next
}

// NewServer starts a fake that answers the i-th request with replies[i].
// A request beyond the script fails the test. The server is closed when
// the test ends; t.Cleanup also fails the test if replies were left unused.
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
			t.Errorf("openaitest: %d of %d scripted replies were never requested", len(s.replies)-s.next, len(s.replies))
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
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		s.t.Errorf("openaitest: unexpected request %s %s", r.Method, r.URL.Path)
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("openaitest: read request: %v", err)
		writeError(w, http.StatusBadRequest, "unreadable body")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.requests)
	s.requests = append(s.requests, Request{Header: r.Header.Clone(), Body: body})
	if s.next >= len(s.replies) {
		s.t.Errorf("openaitest: request %d is beyond the %d scripted replies", n, len(s.replies))
		writeError(w, http.StatusInternalServerError, "no more scripted replies")
		return
	}
	reply := s.replies[s.next]
	s.next++
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"` // a string or a list of items
	}
	var input []json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		s.t.Errorf("openaitest: request %d is not a Responses request: %v", n, err)
	} else if strings.HasPrefix(strings.TrimSpace(string(req.Input)), "[") {
		if err := json.Unmarshal(req.Input, &input); err != nil {
			s.t.Errorf("openaitest: request %d: input: %v", n, err)
		}
	}
	if reply.Code != 0 {
		// An error reply does not consume the calls to be answered: the
		// client is expected to retry the same request.
		for k, v := range reply.Header {
			w.Header()[k] = v
		}
		writeError(w, reply.Code, cmpOr(reply.Message, http.StatusText(reply.Code)))
		return
	}
	s.checkAnswers(n, input)
	s.issued = callIDs(reply.Output)
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(response(fmt.Sprintf("resp_%03d", n), req.Model, reply)); err != nil {
		s.t.Errorf("openaitest: write response %d: %v", n, err)
	}
}

// checkAnswers checks that input answers each issued call exactly once,
// by call_id, with a screenshot.
func (s *Server) checkAnswers(n int, input []json.RawMessage) {
	answers := map[string]int{}
	for _, raw := range input {
		var it struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		}
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		switch it.Type {
		case "computer_call_output":
			answers[it.CallID]++
			var out struct {
				Type     string `json:"type"`
				ImageURL string `json:"image_url"`
			}
			if err := json.Unmarshal(it.Output, &out); err != nil || out.Type != "computer_screenshot" || !strings.HasPrefix(out.ImageURL, "data:image/") {
				s.t.Errorf("openaitest: request %d: computer_call_output %s has output %s, want a computer_screenshot with a data URL", n, it.CallID, short(it.Output))
			}
		case "function_call_output":
			answers[it.CallID]++
		}
	}
	for _, id := range s.issued {
		if answers[id] != 1 {
			s.t.Errorf("openaitest: request %d answers call %q %d times, want once", n, id, answers[id])
		}
	}
}

func short(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// callIDs lists the call_id of every call among output items.
func callIDs(output []json.RawMessage) []string {
	var ids []string
	for _, raw := range output {
		var it struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		}
		if json.Unmarshal(raw, &it) == nil && (it.Type == "computer_call" || it.Type == "function_call") {
			ids = append(ids, it.CallID)
		}
	}
	return ids
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	typ := "invalid_request_error"
	if code >= 500 {
		typ = "server_error"
	} else if code == http.StatusTooManyRequests {
		typ = "rate_limit_exceeded"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": nil,
	}})
}

// response is a Responses API response object.
func response(id, model string, r Reply) map[string]any {
	status := cmpOr(r.Status, "completed")
	output := r.Output
	if output == nil {
		output = []json.RawMessage{}
	}
	resp := map[string]any{
		"id":                   id,
		"object":               "response",
		"created_at":           1767225600,
		"status":               status,
		"error":                nil,
		"incomplete_details":   nil,
		"instructions":         nil,
		"max_output_tokens":    nil,
		"model":                model,
		"output":               output,
		"parallel_tool_calls":  true,
		"previous_response_id": nil,
		"reasoning":            map[string]any{"effort": nil, "summary": nil},
		"store":                false,
		"temperature":          1.0,
		"text":                 map[string]any{"format": map[string]any{"type": "text"}},
		"tool_choice":          "auto",
		"tools":                []any{},
		"top_p":                1.0,
		"truncation":           "disabled",
		"metadata":             map[string]any{},
		"usage": map[string]any{
			"input_tokens":          r.Usage.Input,
			"input_tokens_details":  map[string]any{"cached_tokens": r.Usage.Cached},
			"output_tokens":         r.Usage.Output,
			"output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens":          r.Usage.Input + r.Usage.Output,
		},
	}
	switch status {
	case "incomplete":
		resp["incomplete_details"] = map[string]any{"reason": cmpOr(r.Incomplete, "max_output_tokens")}
	case "failed":
		resp["error"] = map[string]any{"code": "server_error", "message": cmpOr(r.Message, "the model failed")}
	}
	return resp
}

// ComputerCall is a GA computer_call item whose actions batch holds the
// given action objects, each a JSON object such as
// `{"type":"click","x":10,"y":20}` (see openai.DecodeAction).
func ComputerCall(callID string, actionObjects ...string) json.RawMessage {
	return Call{ID: callID, Actions: actionObjects}.Item()
}

// PreviewCall is a computer-use-preview computer_call item with one action.
func PreviewCall(callID, actionObject string) json.RawMessage {
	return Call{ID: callID, Actions: []string{actionObject}, Preview: true}.Item()
}

// Call describes a computer_call item in full.
type Call struct {
	ID      string   // call_id; the item's id is derived from it
	Actions []string // action objects as JSON
	// Preview writes the one action as "action" (the preview shape)
	// instead of an "actions" batch.
	Preview bool
	Checks  []harness.SafetyCheck // pending_safety_checks
}

// Item writes c as an output item. An action that is not valid JSON is
// written as a JSON string, so that the client sees a malformed action.
func (c Call) Item() json.RawMessage {
	acts := make([]json.RawMessage, len(c.Actions))
	for i, a := range c.Actions {
		if json.Valid([]byte(a)) {
			acts[i] = json.RawMessage(a)
		} else {
			acts[i], _ = json.Marshal(a)
		}
	}
	checks := make([]map[string]any, len(c.Checks))
	for i, ch := range c.Checks {
		checks[i] = map[string]any{"id": ch.ID, "code": ch.Code, "message": ch.Message}
	}
	it := map[string]any{
		"type":                  "computer_call",
		"id":                    "cu_" + c.ID,
		"call_id":               c.ID,
		"status":                "completed",
		"pending_safety_checks": checks,
	}
	switch {
	case c.Preview && len(acts) == 1:
		it["action"] = acts[0]
	default:
		it["actions"] = acts
	}
	return mustJSON(it)
}

// Actions encodes canonical actions as action objects for ComputerCall,
// using openai.EncodeAction. An action that cannot be encoded fails t.
func Actions(t TB, as ...actions.Action) []string {
	t.Helper()
	out := make([]string, len(as))
	for i, a := range as {
		raw, err := openai.EncodeAction(a)
		if err != nil {
			t.Fatalf("openaitest.Actions: %v", err)
		}
		out[i] = string(raw)
	}
	return out
}

// FunctionCall is a function_call item; arguments is the JSON string the
// model wrote, which need not be valid.
func FunctionCall(callID, name, arguments string) json.RawMessage {
	return mustJSON(map[string]any{
		"type": "function_call", "id": "fc_" + callID, "call_id": callID,
		"name": name, "arguments": arguments, "status": "completed",
	})
}

// Message is an assistant message item with one output_text part.
func Message(text string) json.RawMessage {
	return mustJSON(map[string]any{
		"type": "message", "id": "msg_" + fmt.Sprint(len(text)), "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
	})
}

// Refusal is an assistant message item with a refusal part.
func Refusal(text string) json.RawMessage {
	return mustJSON(map[string]any{
		"type": "message", "id": "msg_refusal", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "refusal", "refusal": text}},
	})
}

// Reasoning is a reasoning item with a summary and opaque encrypted
// content, which a client must pass back unchanged.
func Reasoning(id, summary string) json.RawMessage {
	it := map[string]any{
		"type": "reasoning", "id": id, "summary": []any{},
		"encrypted_content": "gAAAAB" + strings.Repeat("x", 12) + "==" + id,
	}
	if summary != "" {
		it["summary"] = []any{map[string]any{"type": "summary_text", "text": summary}}
	}
	return mustJSON(it)
}

// mustJSON marshals values made of maps, strings and raw JSON, which
// cannot fail.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{"type":"openaitest_marshal_error"}`)
	}
	return b
}

// Output is a call's answer among a request's input items.
type Output struct {
	Type   string // "computer_call_output" or "function_call_output"
	CallID string
	// Text is a function_call_output's output when it is a string, or the
	// text parts of its content list, joined by newlines.
	Text string
	// Image is the image URL of a computer_call_output's screenshot or the
	// image part of a function_call_output; empty if none.
	Image string
	// Acknowledged lists the ids of acknowledged_safety_checks.
	Acknowledged []string
}

// Outputs returns the call outputs among the input items of a request
// body, in order.
func Outputs(body json.RawMessage) ([]Output, error) {
	var req struct {
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("openaitest: request body: %w", err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(req.Input, &items); err != nil {
		return nil, fmt.Errorf("openaitest: input is not a list of items: %w", err)
	}
	var outs []Output
	for i, raw := range items {
		var it struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
			Acks   []struct {
				ID string `json:"id"`
			} `json:"acknowledged_safety_checks"`
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, fmt.Errorf("openaitest: item %d: %w", i, err)
		}
		if it.Type != "computer_call_output" && it.Type != "function_call_output" {
			continue
		}
		o := Output{Type: it.Type, CallID: it.CallID}
		for _, a := range it.Acks {
			o.Acknowledged = append(o.Acknowledged, a.ID)
		}
		var parts []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL string `json:"image_url"`
		}
		var shot struct {
			ImageURL string `json:"image_url"`
		}
		switch {
		case json.Unmarshal(it.Output, &o.Text) == nil:
		case json.Unmarshal(it.Output, &parts) == nil:
			var texts []string
			for _, p := range parts {
				switch p.Type {
				case "input_text":
					texts = append(texts, p.Text)
				case "input_image":
					o.Image = p.ImageURL
				}
			}
			o.Text = strings.Join(texts, "\n")
		case json.Unmarshal(it.Output, &shot) == nil:
			o.Image = shot.ImageURL
		default:
			return nil, fmt.Errorf("openaitest: item %d: output %s", i, short(it.Output))
		}
		outs = append(outs, o)
	}
	return outs, nil
}

// Transport returns a RoundTripper that serves requests in-process from
// the same script, without the network, so that a Model can use the fake
// inside a testing/synctest bubble, where the waits a Retry-After asks for
// take no real time: set it as the Transport of openai.Config.HTTPClient
// (BaseURL stays s.URL).
func (s *Server) Transport() http.RoundTripper { return inproc.Transport(http.HandlerFunc(s.serve)) }
