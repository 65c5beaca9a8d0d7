package chattest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/chat/chattest"
)

// recorder is a chattest.TB that records failures instead of failing.
type recorder struct {
	errs    []string
	cleanup []func()
}

func (*recorder) Helper()                        {}
func (r *recorder) Errorf(f string, args ...any) { r.errs = append(r.errs, fmt.Sprintf(f, args...)) }
func (r *recorder) Fatalf(f string, args ...any) { r.errs = append(r.errs, fmt.Sprintf(f, args...)) }
func (r *recorder) Cleanup(f func())             { r.cleanup = append(r.cleanup, f) }
func (r *recorder) close() {
	for _, f := range r.cleanup {
		f()
	}
}
func (r *recorder) failed(substr string) bool {
	for _, e := range r.errs {
		if strings.Contains(e, substr) {
			return true
		}
	}
	return false
}

func post(t *testing.T, url string, body any) map[string]any {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url+"chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("response is not JSON: %v", err)
	}
	return out
}

func msgs(m ...map[string]any) map[string]any {
	return map[string]any{"model": "m", "messages": m}
}

func user(text string) map[string]any { return map[string]any{"role": "user", "content": text} }

func TestServerReplies(t *testing.T) {
	r := &recorder{}
	srv := chattest.NewServer(r,
		chattest.Calls("Clicking.", chattest.Computer("call_1", `{"type":"click","x":1,"y":2}`)),
		chattest.UITARSActions(t, "Done.", actions.Action{Kind: actions.Click, At: actions.Pt(3, 4), HasAt: true}),
	)
	got := post(t, srv.URL, msgs(user("hi")))
	choice := got["choices"].([]any)[0].(map[string]any)
	if choice["finish_reason"] != "tool_calls" {
		t.Errorf("finish_reason = %v, want tool_calls", choice["finish_reason"])
	}
	call := choice["message"].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	if diff := cmp.Diff(map[string]any{"id": "call_1", "type": "function",
		"function": map[string]any{"name": "computer", "arguments": `{"type":"click","x":1,"y":2}`}}, call); diff != "" {
		t.Errorf("tool call (-want +got):\n%s", diff)
	}
	got = post(t, srv.URL, msgs(user("hi"),
		map[string]any{"role": "assistant", "tool_calls": []any{call}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "ok"},
		user("screenshot")))
	msg := got["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if want := "Thought: Done.\nAction: click(start_box='<|box_start|>(3,4)<|box_end|>')"; msg["content"] != want {
		t.Errorf("content = %q, want %q", msg["content"], want)
	}
	r.close()
	if len(r.errs) > 0 {
		t.Errorf("server failed a correct conversation: %q", r.errs)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("Requests() = %d, want 2", len(reqs))
	}
	m, err := reqs[1].Messages()
	if err != nil || len(m) != 4 || m[2].ToolCallID != "call_1" {
		t.Errorf("Requests()[1].Messages() = %+v, %v; want 4 messages, the third answering call_1", m, err)
	}
}

func TestServerChecks(t *testing.T) {
	tests := []struct {
		name    string
		replies []chattest.Reply
		bodies  []map[string]any
		want    string
	}{
		{"unanswered call", []chattest.Reply{chattest.Calls("", chattest.Computer("call_1", `{}`)), chattest.Text("x")},
			[]map[string]any{msgs(user("a")), msgs(user("a"), user("b"))}, `answers tool call "call_1" 0 times, want once`},
		{"answer to no call", []chattest.Reply{chattest.Text("x")},
			[]map[string]any{msgs(user("a"), map[string]any{"role": "tool", "tool_call_id": "nope", "content": "ok"})}, `answers tool call "nope", which no earlier assistant message made`},
		{"no user message after text", []chattest.Reply{chattest.Text("x"), chattest.Text("y")},
			[]map[string]any{msgs(user("a")), msgs(user("a"), map[string]any{"role": "assistant", "content": "x"})}, "want a user message after the model's reply"},
		{"beyond the script", nil, []map[string]any{msgs(user("a"))}, "beyond the 0 scripted replies"},
		{"unused replies", []chattest.Reply{chattest.Text("x")}, nil, "1 of 1 scripted replies were never requested"},
		{"no model", []chattest.Reply{chattest.Text("x")}, []map[string]any{{"messages": []any{user("a")}}}, "not a chat completion request with a model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			srv := chattest.NewServer(r, tt.replies...)
			for _, b := range tt.bodies {
				post(t, srv.URL, b)
			}
			r.close()
			if !r.failed(tt.want) {
				t.Errorf("server errors = %q, want one containing %q", r.errs, tt.want)
			}
		})
	}
}

func TestServerError(t *testing.T) {
	r := &recorder{}
	srv := chattest.NewServer(r, chattest.Reply{Code: http.StatusTooManyRequests, Message: "slow down", Header: http.Header{"Retry-After": {"3"}}})
	b, _ := json.Marshal(msgs(user("a")))
	resp, err := http.Post(srv.URL+"chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || body.Error.Message != "slow down" || body.Error.Type != "RateLimitError" {
		t.Errorf("error reply = %d %v %+v, want 429 with Retry-After 3 and the message", resp.StatusCode, resp.Header, body)
	}
	r.close()
	if len(r.errs) > 0 {
		t.Errorf("server errors = %q, want none", r.errs)
	}
}
