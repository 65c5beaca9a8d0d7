package openai_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/openai/openaitest"
	"github.com/spotter-harness/spotter/screen"
)

// tabsNote is the note a list_tabs leaves. harness.Executor puts a
// screenshot's events into the Result's Notes and keeps them on the Shot:
// results here are built the same way.
const tabsNote = "Open tabs (switch_tab and close_tab take the number): [0] shop (https://shop.test/) (active)"

// executorResult is a Result as harness.Executor makes it: the
// screenshot's events are in Notes too.
func executorResult(c harness.Call, events ...string) harness.Result {
	s := shot("f2", "https://shop.test/")
	s.Events = events
	return harness.Result{CallID: c.ID, Shot: s, Ran: len(c.Actions), Err: c.DecodeErr, Notes: append([]string(nil), events...)}
}

// TestDecodeCallFunctionsLikeModel: the executor reads the function_call
// items of the browser functions a Model declares (a task's
// browser_tools), exactly as that Model reads them in a turn from the
// Responses API, and answers each with the function_call_output that
// Model sends for the same result, screenshot and image detail included
// (GA and preview).
func TestDecodeCallFunctionsLikeModel(t *testing.T) {
	items := []json.RawMessage{
		openaitest.FunctionCall("call_1", "list_tabs", `{}`),
		openaitest.FunctionCall("call_2", "list_tabs", ``),
		openaitest.FunctionCall("call_3", "switch_tab", `{"tab":1}`),
		openaitest.FunctionCall("call_4", "close_tab", `{"tab":2}`),
		openaitest.FunctionCall("call_5", "dialog", `{"accept":true,"text":"Ada"}`),
		openaitest.FunctionCall("call_6", "upload", `{"files":["/srv/cv.pdf"]}`),
		openaitest.FunctionCall("call_7", "dialog", `{"accept":"yes"}`),
		openaitest.FunctionCall("call_8", "upload", `{"files":"cv.pdf"}`),
		openaitest.FunctionCall("call_9", "navigate", `{"url":"https://a.test/"}`), // not declared with browser_tools
		openaitest.FunctionCall("call_10", "lookup_booking", `{}`),
		openaitest.FunctionCall("call_11", "switch_tab", `{"tab":`),
	}
	for _, tt := range []struct {
		model, detail string
		cfg           openai.Config
	}{
		{"gpt-5.4", "original", openai.Config{Model: "gpt-5.4"}},
		{"computer-use-preview", "auto", openai.Config{Model: "computer-use-preview", Display: screen.Size{W: 4, H: 3}}},
	} {
		t.Run(tt.model, func(t *testing.T) {
			srv := openaitest.NewServer(t, openaitest.Reply{Output: items}, openaitest.Reply{Output: []json.RawMessage{openaitest.Message("Done.")}})
			cfg := tt.cfg
			cfg.Functions = openai.BrowserFunctions()
			// Every screenshot as it is, as EncodeResultFor writes it.
			cfg.Context = ctxpolicy.Policy{Keep: ctxpolicy.All, Repeats: true}
			m := newModel(t, srv, cfg)
			turn := next(t, m, harness.Input{Task: "t", Shot: shot("f1", "https://shop.test/")})
			if len(turn.Calls) != len(items) {
				t.Fatalf("the Model read %d calls, want %d", len(turn.Calls), len(items))
			}
			var (
				in       harness.Input
				encoded  []any
				messages []json.RawMessage
			)
			for i, raw := range items {
				want := turn.Calls[i]
				got, err := openai.DecodeCall(raw, display)
				if (err != nil) != (want.DecodeErr != nil) || !errors.Is(got.DecodeErr, err) {
					t.Errorf("DecodeCall(%s) error = %v (DecodeErr %v), the Model's DecodeErr = %v", raw, err, got.DecodeErr, want.DecodeErr)
				}
				if err != nil && !errors.Is(err, actions.ErrInvalid) {
					t.Errorf("DecodeCall(%s) error = %v, want it to wrap ErrInvalid", raw, err)
				}
				if got.ID != want.ID || got.Name != want.Name || got.Space != want.Space || string(got.Raw) != string(raw) {
					t.Errorf("DecodeCall(%s) = id %q name %q space %v raw %s, the Model's = %q %q %v", raw, got.ID, got.Name, got.Space, got.Raw, want.ID, want.Name, want.Space)
				}
				if diff := cmp.Diff(want.Actions, got.Actions); diff != "" {
					t.Errorf("DecodeCall(%s) actions (-Model's +DecodeCall's):\n%s", raw, diff)
				}
				r := executorResult(got, tabsNote)
				in.Results = append(in.Results, r)
				out, err := openai.EncodeResultFor(tt.model, got, r)
				if err != nil {
					t.Fatalf("EncodeResultFor(%s) error: %v", raw, err)
				}
				encoded = append(encoded, jsonValue(t, out))
				if strings.Count(string(out), "Open tabs") != 1 {
					t.Errorf("EncodeResultFor(%s) = %.300s, want the tab list once", raw, out)
				}
				if msg := openai.ResultMessage(got, r); msg != nil {
					messages = append(messages, msg)
				}
			}
			if messages != nil {
				t.Errorf("ResultMessage of function calls = %s, want none: a function_call_output carries its text", messages)
			}
			next(t, m, in)
			var body struct {
				Input []json.RawMessage `json:"input"`
			}
			if err := json.Unmarshal(srv.Requests()[1].Body, &body); err != nil {
				t.Fatal(err)
			}
			var sent []any
			for _, it := range body.Input {
				if v := jsonValue(t, it).(map[string]any); v["type"] == "function_call_output" {
					sent = append(sent, v)
				}
			}
			if diff := cmp.Diff(sent, encoded); diff != "" {
				t.Errorf("EncodeResultFor(%q) outputs (-the Model's +EncodeResultFor's):\n%s", tt.model, diff)
			}
			if !strings.Contains(string(srv.Requests()[1].Body), `"detail":"`+tt.detail+`"`) {
				t.Errorf("the function_call_outputs' screenshots do not carry detail %q", tt.detail)
			}
		})
	}
}

// jsonValue decodes b, so that JSON texts compare whatever their key order.
func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// TestDecodeCallFunctionErrors: a function_call item the executor cannot
// run is an error in JSON's words, with as much of the call as can answer
// it.
func TestDecodeCallFunctionErrors(t *testing.T) {
	for _, tt := range []struct {
		raw, id, want string
	}{
		{`{"type":"function_call","call_id":"c1","name":"dialog","arguments":{"accept":true}}`, "c1",
			`"dialog": "arguments" must be a string holding a JSON object, as the Responses API sends it, got an object`},
		{`{"type":"function_call","call_id":"c1","name":"dialog","arguments":"[true]"}`, "c1", "dialog: arguments must be a JSON object, got an array"},
		{`{"type":"function_call","call_id":"c1","name":"dialog","arguments":"{}"}`, "c1", `dialog: missing "accept"`},
		{`{"type":"function_call","call_id":"c1","name":"switch_tab","arguments":"{\"tab\":-1}"}`, "c1", "switch_tab"},
		{`{"type":"function_call","call_id":"c1","name":"upload","arguments":"{\"files\":[]}"}`, "c1", `upload: missing "files"`},
		{`{"type":"function_call","call_id":"c1","arguments":"{}"}`, "c1", `unknown function "" (declared: list_tabs, switch_tab, close_tab, dialog, upload)`},
		{`{"type":"function_call","call_id":"c1","name":"click","arguments":"{}"}`, "c1", `unknown function "click"`},
		{`{"type":"function_call","call_id":"c1","name":7,"arguments":"{}"}`, "c1", `"name" must be a string, got a number`},
		{`{"type":"function_call","call_id":7,"name":"list_tabs","arguments":"{}"}`, "", `"call_id" must be a string, got a number`},
		{`{"type":"function_call","name":"list_tabs","arguments":"{}"}`, "", `function_call has no "call_id"`},
		{`{"type":"function_call","call_id":"c1","name":"list_tabs","arguments":null}`, "", ""}, // null: no arguments
	} {
		c, err := openai.DecodeCall(json.RawMessage(tt.raw), display)
		if tt.want == "" {
			if err != nil || c.ID != "c1" || len(c.Actions) != 1 {
				t.Errorf("DecodeCall(%s) = call %q with %d actions, %v; want c1 with one action", tt.raw, c.ID, len(c.Actions), err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, actions.ErrInvalid) {
			t.Errorf("DecodeCall(%s) error = %v, want ErrInvalid containing %q", tt.raw, err, tt.want)
			continue
		}
		if c.ID != tt.id || c.DecodeErr == nil || c.Actions != nil {
			t.Errorf("DecodeCall(%s) = call %q with DecodeErr %v and %d actions, want call %q with the error and none", tt.raw, c.ID, c.DecodeErr, len(c.Actions), tt.id)
		}
		if strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "json: cannot") {
			t.Errorf("DecodeCall(%s) error = %q, which speaks Go, not JSON", tt.raw, err)
		}
		if c.ID != "" {
			out, err := openai.EncodeResult(c, executorResult(c))
			if err != nil || !strings.Contains(string(out), `"type":"function_call_output"`) || !strings.Contains(string(out), `"call_id":"c1"`) {
				t.Errorf("EncodeResult(DecodeCall(%s)) = %s, %v, want a function_call_output for c1", tt.raw, out, err)
			}
		}
	}
}

// TestResultNotesOnce: harness.Executor puts a screenshot's events in the
// Result's Notes and keeps them on the Shot; the text sent for a
// computer_call says each once, and says events that are only on the Shot
// too.
func TestResultNotesOnce(t *testing.T) {
	c, err := openai.DecodeCall(json.RawMessage(`{"type":"computer_call","call_id":"call_1","actions":[{"type":"click","x":1,"y":2}]}`), display)
	if err != nil {
		t.Fatal(err)
	}
	r := executorResult(c, "A new tab opened and is now the active tab (tab 1).", tabsNote)
	r.Shot.Events = append(r.Shot.Events, "the page is now at https://shop.test/2")
	var msg struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(openai.ResultMessage(c, r), &msg); err != nil {
		t.Fatal(err)
	}
	want := "computer_call call_1: A new tab opened and is now the active tab (tab 1).\n" +
		"computer_call call_1: " + tabsNote + "\n" +
		"computer_call call_1: the page is now at https://shop.test/2"
	if diff := cmp.Diff(want, msg.Content); diff != "" {
		t.Errorf("ResultMessage (-want +got):\n%s", diff)
	}
}
