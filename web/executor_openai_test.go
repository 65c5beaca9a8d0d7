package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// openaiAnswer is the executor's answer to an OpenAI-format call.
type openaiAnswer struct {
	execAnswerFrame
	Message json.RawMessage `json:"message"`
}

// text is what the model reads about the call: a function_call_output's
// input_text, or the content of the user message that follows a
// computer_call_output.
func (a openaiAnswer) text(t *testing.T) string {
	t.Helper()
	var out struct {
		Type   string          `json:"type"`
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(a.Result, &out); err != nil {
		t.Fatalf("result %.300s: %v", a.Result, err)
	}
	var text []string
	if out.Type == "function_call_output" {
		var parts []struct{ Type, Text string }
		if err := json.Unmarshal(out.Output, &parts); err != nil {
			t.Fatalf("function_call_output's output %.300s is not a list of parts: %v", out.Output, err)
		}
		for _, p := range parts {
			if p.Type == "input_text" {
				text = append(text, p.Text)
			}
		}
	}
	if a.Message != nil {
		var m struct{ Role, Content string }
		if err := json.Unmarshal(a.Message, &m); err != nil || m.Role != "user" {
			t.Fatalf("message %.300s is not a user message item: %v", a.Message, err)
		}
		text = append(text, m.Content)
	}
	return strings.Join(text, "\n")
}

// shorter replaces the base64 of images (OpenAI's data URLs, Gemini's
// inline data), for failure messages.
func shorter(b []byte) string {
	b = regexp.MustCompile(`base64,[^"]*`).ReplaceAll(b, []byte(`base64,...`))
	return string(regexp.MustCompile(`"data":"[^"]*"`).ReplaceAll(b, []byte(`"data":"..."`)))
}

// postOpenAI posts an OpenAI item and returns the answer, failing unless
// it is done.
func (e *env) postOpenAI(id, item string) openaiAnswer {
	e.t.Helper()
	code, out := e.postRaw("/executor/sessions/"+id+"/call?wait=60s", item)
	var a openaiAnswer
	if err := json.Unmarshal(out, &a); err != nil || code != http.StatusOK || a.Status != "done" {
		e.t.Fatalf("call %s = %d %.500s, want 200 done", item, code, shorter(out))
	}
	return a
}

// openaiFunctionCall is a function_call output item as the Responses API
// returns it: the arguments are a JSON string.
func openaiFunctionCall(callID, name string, args map[string]any) string {
	if args == nil {
		args = map[string]any{}
	}
	return mustJSON(map[string]any{"type": "function_call", "id": "fc_" + callID, "call_id": callID, "name": name,
		"arguments": mustJSON(args), "status": "completed"})
}

// TestExecutorOpenAIFunctions: an OpenAI-format executor client posts a
// function_call item of a browser function (as a Model declares them with
// browser_tools) and gets a function_call_output for the same call_id: a
// text part and the fresh screenshot as an input_image with the image
// detail the adapter sends. A function the adapter does not declare is
// that call's error, and the session runs on.
func TestExecutorOpenAIFunctions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{fake: true})
	code, s := e.createExec(map[string]any{"provider": "openai", "approvals": map[string]any{"supervise": "none"}})
	if code != http.StatusOK {
		t.Fatalf("create = %d %+v", code, s)
	}
	a := e.postOpenAI(s.ID, openaiFunctionCall("call_1", "list_tabs", nil))
	var out struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL string `json:"image_url"`
			Detail   string `json:"detail"`
		} `json:"output"`
	}
	if err := json.Unmarshal(a.Result, &out); err != nil {
		t.Fatalf("result %s: %v", shorter(a.Result), err)
	}
	if out.Type != "function_call_output" || out.CallID != "call_1" || len(out.Output) != 2 || out.Output[0].Type != "input_text" ||
		out.Output[1].Type != "input_image" || !strings.HasPrefix(out.Output[1].ImageURL, "data:image/png;base64,") ||
		out.Output[1].Detail != "original" {
		t.Errorf("list_tabs: result %s, want a function_call_output for call_1 with a text and the screenshot at detail original", shorter(a.Result))
	}
	if a.Message != nil {
		t.Errorf("list_tabs: message %s, want none: the function_call_output carries the text", a.Message)
	}

	a = e.postOpenAI(s.ID, openaiFunctionCall("call_2", "navigate", map[string]any{"url": "https://a.test/"}))
	if !strings.Contains(a.Error, `unknown function "navigate" (declared: list_tabs, switch_tab, close_tab, dialog, upload)`) ||
		!strings.Contains(a.text(t), `unknown function "navigate"`) {
		t.Errorf("navigate as a function: error %q, text %q, want it refused as undeclared", a.Error, a.text(t))
	}
	code, raw := e.postRaw("/executor/sessions/"+s.ID+"/call?wait=30s",
		`{"type":"function_call","call_id":"call_3","name":"dialog","arguments":{"accept":true}}`)
	var bad openaiAnswer
	if err := json.Unmarshal(raw, &bad); err != nil || code != http.StatusOK || bad.Status != "done" ||
		!strings.Contains(bad.Error, `"arguments" must be a string holding a JSON object`) || goish(bad.Error) ||
		!strings.Contains(string(bad.Result), `"call_id":"call_3"`) {
		t.Errorf("arguments as an object = %d %s, want 200 with the error in JSON's words", code, shorter(raw))
	}
	if a := e.postOpenAI(s.ID, `{"type":"computer_call","call_id":"call_4","actions":[{"type":"wait"}]}`); a.Error != "" {
		t.Errorf("the next call: error %q, want none: the session runs on", a.Error)
	}

	// A computer-use-preview client gets the screenshot at the detail the
	// adapter sends that model.
	code, s = e.createExec(map[string]any{"provider": "openai", "model": map[string]any{"name": "computer-use-preview"},
		"approvals": map[string]any{"supervise": "none"}})
	if code != http.StatusOK {
		t.Fatalf("create (preview) = %d %+v", code, s)
	}
	a = e.postOpenAI(s.ID, openaiFunctionCall("call_1", "list_tabs", nil))
	if !strings.Contains(string(a.Result), `"detail":"auto"`) {
		t.Errorf("list_tabs for computer-use-preview: result %s, want the screenshot at detail auto", shorter(a.Result))
	}
}

// TestExecutorOpenAIBrowserActions: an OpenAI-format executor client, on a
// real Chromium, answers a page's alert() through the dialog function
// (which otherwise blocks every other action), lists tabs (the list said
// once) and switches them, and answers a file chooser with a file the
// session's policy makes available; /etc/passwd is refused.
func TestExecutorOpenAIBrowserActions(t *testing.T) {
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs this on a real Chromium")
	}
	allowed := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(allowed, []byte("quarterly notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{})
	pg := newPageServer(t)
	code, s := e.createExec(map[string]any{"provider": "openai", "start_url": pg.URL + "/page.html",
		"display": map[string]any{"width": 1280, "height": 800}, "policy": pg.policy(t, allowed),
		"approvals": map[string]any{"supervise": "none"}})
	if code != http.StatusOK {
		t.Fatalf("create = %d %+v", code, s)
	}
	if s.Image.W != 1280 || s.Image.H != 800 {
		t.Fatalf("create answer: image %v, want 1280x800", s.Image)
	}
	n := 0
	id := func() string { n++; return fmt.Sprintf("call_%d", n) }
	click := func(x, y int) openaiAnswer {
		return e.postOpenAI(s.ID, fmt.Sprintf(`{"type":"computer_call","id":"cu_%d","call_id":%q,"status":"completed",`+
			`"actions":[{"type":"click","button":"left","x":%d,"y":%d}],"pending_safety_checks":[]}`, n, id(), x, y))
	}
	function := func(name string, args map[string]any) openaiAnswer {
		return e.postOpenAI(s.ID, openaiFunctionCall(id(), name, args))
	}

	// An alert blocks the page until the client answers it.
	if a := click(160, 70); a.Error != "" || !strings.Contains(a.text(t), `alert dialog ("Saved!") is open`) {
		t.Fatalf("click on the alert button: error %q, text %q, want the dialog's note", a.Error, a.text(t))
	}
	if a := click(600, 600); !strings.Contains(a.Error, "answer it with the dialog action first") {
		t.Errorf("click while the alert is open: error %q, want it refused", a.Error)
	}
	if a := function("dialog", map[string]any{"accept": true}); a.Error != "" {
		t.Fatalf("dialog accept: %s", a.Error)
	}
	pg.await(t, "alert-closed")

	// A link opens a new tab; list the tabs and go back to the first.
	if a := click(160, 170); a.Error != "" || !strings.Contains(a.text(t), "A new tab opened") {
		t.Fatalf("click on the link: error %q, text %q, want a new tab", a.Error, a.text(t))
	}
	pg.await(t, "newtab-loaded")
	a := function("list_tabs", nil)
	if text := a.text(t); a.Error != "" || !strings.Contains(text, "[0] opener") || !strings.Contains(text, "[1] the new tab") {
		t.Errorf("list_tabs: error %q, text %q, want both tabs", a.Error, text)
	} else if got := strings.Count(text, "Open tabs"); got != 1 {
		t.Errorf("list_tabs: text %q lists the tabs %d times, want once", text, got)
	}
	if a := function("switch_tab", map[string]any{"tab": 0}); a.Error != "" || !strings.HasSuffix(a.Frame.URL, "/page.html") {
		t.Fatalf("switch_tab 0: error %q, screenshot of %s, want the opener", a.Error, a.Frame.URL)
	}

	// A file chooser takes only the policy's files.
	if a := click(190, 270); a.Error != "" || !strings.Contains(a.text(t), "A file chooser is open") {
		t.Fatalf("click on the file input: error %q, text %q, want the chooser", a.Error, a.text(t))
	}
	if a := function("upload", map[string]any{"files": []string{"/etc/passwd"}}); !strings.Contains(a.Error, `upload of "/etc/passwd" is not allowed`) ||
		!strings.Contains(a.text(t), "/etc/passwd") {
		t.Errorf("upload /etc/passwd: error %q, text %q, want it refused, and the model told", a.Error, a.text(t))
	}
	if a := function("upload", map[string]any{"files": []string{allowed}}); a.Error != "" {
		t.Fatalf("upload %s: %s", allowed, a.Error)
	}
	pg.await(t, "uploaded:notes.txt:quarterly notes")
}

// TestExecutorListTabsOnce: on a real Chromium, the answer to a list_tabs
// call lists the tabs once, in OpenAI's and Gemini's formats (the
// executor's Result repeats the screenshot's events in its notes).
func TestExecutorListTabsOnce(t *testing.T) {
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs this on a real Chromium")
	}
	e := newEnv(t, envOpts{})
	for _, tt := range []struct{ provider, call string }{
		{"openai", openaiFunctionCall("call_1", "list_tabs", nil)},
		{"gemini", `{"functionCall":{"id":"fc_1","name":"list_tabs"}}`}, // Gemini leaves args out
	} {
		t.Run(tt.provider, func(t *testing.T) {
			pg := newPageServer(t)
			code, s := e.createExec(map[string]any{"provider": tt.provider, "start_url": pg.URL + "/page.html",
				"policy": pg.policy(t), "approvals": map[string]any{"supervise": "none"}})
			if code != http.StatusOK {
				t.Fatalf("create = %d %+v", code, s)
			}
			t.Cleanup(func() { e.request("DELETE", "/executor/sessions/"+s.ID, nil).Body.Close() })
			a := e.postOpenAI(s.ID, tt.call)
			native := shorter(a.Result) + string(a.Message)
			if a.Error != "" || strings.Count(native, "Open tabs") != 1 || !strings.Contains(native, "[0] opener") {
				t.Errorf("list_tabs: error %q, answer %s, want the tab list once", a.Error, native)
			}
		})
	}
}
