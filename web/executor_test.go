package web_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/actions"
)

type execAnswer struct {
	Status     string          `json:"status"`
	ToolCallID string          `json:"toolCallId"`
	ApprovalID string          `json:"approvalId"`
	Result     json.RawMessage `json:"result"`
	Error      string          `json:"error"`
}

func (e *env) execPost(path string, body any) (int, execAnswer) {
	e.t.Helper()
	resp := e.request("POST", path, body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var a execAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		e.t.Fatalf("POST %s = %d %s", path, resp.StatusCode, b)
	}
	if resp.StatusCode >= 300 {
		e.t.Logf("POST %s = %d %s", path, resp.StatusCode, b)
	}
	return resp.StatusCode, a
}

func (e *env) execSession(provider string, approvals map[string]any) string {
	e.t.Helper()
	resp := e.request("POST", "/executor/sessions", map[string]any{"provider": provider,
		"display": map[string]any{"width": 1000, "height": 600}, "approvals": approvals})
	defer resp.Body.Close()
	var out struct {
		ID         string
		Screenshot struct{ MimeType, Data string }
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil || out.ID == "" || out.Screenshot.Data == "" {
		e.t.Fatalf("POST /executor/sessions = %d %s, want an id and a screenshot", resp.StatusCode, b)
	}
	return out.ID
}

// The executor API answers each provider's native call with its native
// result, paired to the call's id, with a fresh screenshot.
func TestExecutor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		provider string
		call     string
		want     []string // substrings of the native result
	}{
		{"anthropic", `{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}`,
			[]string{`"type":"tool_result"`, `"tool_use_id":"toolu_1"`, `"type":"image"`}},
		{"openai", `{"type":"computer_call","call_id":"call_1","actions":[{"type":"click","button":"left","x":10,"y":20}],"pending_safety_checks":[]}`,
			[]string{`"type":"computer_call_output"`, `"call_id":"call_1"`, `"image_url":"data:image/png;base64,`}},
		{"gemini", `{"functionCall":{"id":"fc_1","name":"click_at","args":{"x":500,"y":300}}}`,
			[]string{`"functionResponse"`, `"id":"fc_1"`, `"name":"click_at"`, `"inlineData"`}},
	}
	e := newEnv(t, envOpts{})
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			id := e.execSession(tt.provider, map[string]any{"supervise": "none"})
			code, a := e.execPost("/executor/sessions/"+id+"/call?wait=30s", json.RawMessage(tt.call))
			if code != http.StatusOK || a.Status != "done" || a.Error != "" {
				t.Fatalf("call = %d %+v, want 200 done", code, a)
			}
			for _, s := range tt.want {
				if !strings.Contains(string(a.Result), s) {
					t.Errorf("result lacks %s: %.300s", s, a.Result)
				}
			}
			// A malformed call is answered natively with the error.
			bad := strings.Replace(tt.call, "click", "clack", 1)
			bad = strings.NewReplacer("toolu_1", "toolu_2", "call_1", "call_2", "fc_1", "fc_2").Replace(bad)
			code, a = e.execPost("/executor/sessions/"+id+"/call", json.RawMessage(bad))
			if code != http.StatusOK || a.Error == "" {
				t.Errorf("malformed call = %d %+v, want 200 with an error", code, a)
			}
			resp := e.request("DELETE", "/executor/sessions/"+id, nil)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("DELETE = %d", resp.StatusCode)
			}
		})
	}
}

// A call whose action ran but whose screenshot could not be taken is
// answered 200 in every provider's format, with the provider's result item
// saying in words that the action ran and why no screenshot came; OpenAI's
// outputs, which must hold an image, hold the latest screenshot taken
// before the call (before, the answer was a 500 "internal error").
func TestExecutorCaptureFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		provider string
		call     string
		kind     actions.Kind // the action the display performs
		want     []string     // substrings of the native result and message
	}{
		{"anthropic", `{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}`, actions.Click,
			[]string{`"tool_use_id":"toolu_1"`, `"is_error":true`, "the action ran, but no screenshot could be taken", "the display cannot draw"}},
		{"openai", `{"type":"computer_call","call_id":"call_1","actions":[{"type":"click","button":"left","x":10,"y":20}],"pending_safety_checks":[]}`, actions.Click,
			[]string{`"type":"computer_call_output"`, `"call_id":"call_1"`, `"image_url":"data:image/png;base64,`,
				"the action ran, but no screenshot could be taken", "the display cannot draw", "the latest one taken before it"}},
		{"openai", openaiFunctionCall("call_2", "list_tabs", nil), actions.ListTabs,
			[]string{`"type":"function_call_output"`, `"call_id":"call_2"`, `"type":"input_image"`, "the action ran, but no screenshot could be taken"}},
		{"gemini", `{"functionCall":{"id":"fc_1","name":"click_at","args":{"x":500,"y":300}}}`, actions.Click,
			[]string{`"functionResponse"`, `"id":"fc_1"`, "the action ran, but no screenshot could be taken"}},
	}
	e := newEnv(t, envOpts{fake: true})
	for i, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			id := e.execSession(tt.provider, map[string]any{"supervise": "none"})
			e.mu.Lock()
			fake := e.fakes[len(e.fakes)-1]
			e.mu.Unlock()
			fake.FailCaptures(func() error { return errors.New("the display cannot draw") })
			code, out := e.postRaw("/executor/sessions/"+id+"/call?wait=30s", tt.call)
			if code != http.StatusOK {
				t.Fatalf("call %d = %d %.500s, want 200", i, code, shorter(out))
			}
			for _, s := range tt.want {
				if !strings.Contains(string(out), s) {
					t.Errorf("answer lacks %q: %.800s", s, shorter(out))
				}
			}
			if p := fake.Performed(); len(p) == 0 || p[len(p)-1].Kind != tt.kind {
				t.Errorf("the display performed %+v, want the call's %v last", p, tt.kind)
			}
		})
	}
}

// A call that needs approval answers 202 and completes once a human
// decides; the result can then be long-polled.
func TestExecutorApproval(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	id := e.execSession("anthropic", map[string]any{"confirm": []string{"click"}})
	call := `{"type":"tool_use","id":"toolu_9","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}`
	code, a := e.execPost("/executor/sessions/"+id+"/call?wait=0s", json.RawMessage(call))
	for code == http.StatusAccepted && a.ApprovalID == "" { // the call may not have reached the gate yet
		code, a = e.execPost("/executor/sessions/"+id+"/call?wait=0s", json.RawMessage(call))
	}
	if code != http.StatusAccepted || a.Status != "pending_approval" || a.ToolCallID != "toolu_9" {
		t.Fatalf("call = %d %+v, want 202 pending_approval", code, a)
	}
	var decided map[string]any
	resp := e.request("POST", "/approvals/"+a.ApprovalID, map[string]any{"decision": "approve"})
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &decided) != nil || decided["status"] != "approved" {
		t.Fatalf("approve = %d %s", resp.StatusCode, b)
	}
	resp = e.request("GET", "/executor/sessions/"+id+"/calls/toolu_9?wait=30s", nil)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"tool_use_id":"toolu_9"`) {
		t.Fatalf("GET result = %d %.300s", resp.StatusCode, b)
	}
	resp = e.request("POST", "/approvals/"+a.ApprovalID, map[string]any{"decision": "deny"})
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("second decision = %d, want 409", resp.StatusCode)
	}
}

// text is the text of an answer's native result (its content's text
// blocks, or the result itself when it has none).
func (a execAnswer) text() string {
	var r struct {
		Content []struct{ Type, Text string }
	}
	if json.Unmarshal(a.Result, &r) != nil || len(r.Content) == 0 {
		return string(a.Result)
	}
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}
