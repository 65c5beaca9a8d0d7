package openaitest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/openai/openaitest"
)

// recorder is a TB that records failures instead of failing.
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

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url+"responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("response body: %v", err)
	}
	return resp.StatusCode, v
}

func TestServerChecksPairing(t *testing.T) {
	tests := []struct {
		name   string
		second string // the input of the second request
		want   []string
	}{
		{"answered", `[{"type":"computer_call_output","call_id":"call_1","output":{"type":"computer_screenshot","image_url":"data:image/png;base64,AA=="}}]`, nil},
		{"unanswered", `[]`, []string{`openaitest: request 1 answers call "call_1" 0 times, want once`}},
		{"answered twice", `[{"type":"function_call_output","call_id":"call_1"},{"type":"function_call_output","call_id":"call_1"}]`,
			[]string{`openaitest: request 1 answers call "call_1" 2 times, want once`}},
		{"no screenshot", `[{"type":"computer_call_output","call_id":"call_1","output":{"type":"input_text"}}]`,
			[]string{`openaitest: request 1: computer_call_output call_1 has output {"type":"input_text"}, want a computer_screenshot with a data URL`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			srv := openaitest.NewServer(rec,
				openaitest.Reply{Output: []json.RawMessage{openaitest.ComputerCall("call_1", `{"type":"screenshot"}`)}},
				openaitest.Reply{Output: []json.RawMessage{openaitest.Message("done")}},
			)
			code, resp := post(t, srv.URL, `{"model":"m","input":[]}`)
			if code != http.StatusOK || resp["status"] != "completed" || resp["model"] != "m" {
				t.Errorf("first reply = %d %v, want 200 with a completed response for model m", code, resp)
			}
			post(t, srv.URL, `{"model":"m","input":`+tt.second+`}`)
			rec.close()
			if diff := cmp.Diff(tt.want, rec.errs); diff != "" {
				t.Errorf("failures (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServerScriptLength(t *testing.T) {
	rec := &recorder{}
	srv := openaitest.NewServer(rec, openaitest.Reply{}, openaitest.Reply{})
	post(t, srv.URL, `{"model":"m","input":[]}`)
	rec.close()
	want := []string{"openaitest: 1 of 2 scripted replies were never requested"}
	if diff := cmp.Diff(want, rec.errs); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}

	rec = &recorder{}
	srv = openaitest.NewServer(rec)
	if code, _ := post(t, srv.URL, `{"model":"m","input":[]}`); code != http.StatusInternalServerError {
		t.Errorf("request beyond the script: status %d, want 500", code)
	}
	rec.close()
	want = []string{"openaitest: request 0 is beyond the 0 scripted replies"}
	if diff := cmp.Diff(want, rec.errs); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
}

func TestErrorReply(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Reply{Code: http.StatusTooManyRequests, Message: "slow down", Header: http.Header{"Retry-After": {"3"}}})
	resp, err := http.Post(srv.URL+"responses", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3" || !strings.Contains(body.String(), `"message":"slow down"`) {
		t.Errorf("error reply = %d, Retry-After %q, %s; want 429, 3 and the message", resp.StatusCode, resp.Header.Get("Retry-After"), body.String())
	}
}

func TestItems(t *testing.T) {
	as := openaitest.Actions(t, actions.Action{Kind: actions.Click, At: actions.Pt(1, 2), HasAt: true},
		actions.Action{Kind: actions.Type, Text: "hi"})
	item := openaitest.ComputerCall("call_9", as...)
	var c struct {
		Type    string            `json:"type"`
		CallID  string            `json:"call_id"`
		Actions []json.RawMessage `json:"actions"`
	}
	if err := json.Unmarshal(item, &c); err != nil {
		t.Fatal(err)
	}
	got, err := openai.DecodeActions(mustMarshal(t, c.Actions))
	if err != nil {
		t.Fatal(err)
	}
	want := []actions.Action{{Kind: actions.Click, At: actions.Pt(1, 2), HasAt: true}, {Kind: actions.Type, Text: "hi"}}
	if c.Type != "computer_call" || c.CallID != "call_9" {
		t.Errorf("ComputerCall() = %s, want a computer_call with call_id call_9", item)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("actions of ComputerCall(Actions(...)) (-want +got):\n%s", diff)
	}
	// An action that is not JSON is sent as a string, for decode error tests.
	if got := string(openaitest.PreviewCall("c", "click here")); !strings.Contains(got, `"action":"click here"`) {
		t.Errorf("PreviewCall(c, not JSON) = %s, want the action as a JSON string", got)
	}
}

func mustMarshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ExampleNewServer() {
	t := &recorder{}
	defer t.close()
	srv := openaitest.NewServer(t, openaitest.Reply{Output: []json.RawMessage{openaitest.Message("hello")}})
	resp, err := http.Post(srv.URL+"responses", "application/json", strings.NewReader(`{"model":"gpt-5.4","input":"hi"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Output []struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"output"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Status, r.Output[0].Content[0].Text, len(srv.Requests()), t.errs)
	// Output: completed hello 1 []
}
