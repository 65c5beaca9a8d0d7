package web_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"io"
	"math"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/isolate/isolatetest"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

// execCreated is the answer of POST /executor/sessions.
type execCreated struct {
	ID         string
	Image      screen.Size
	Screenshot struct{ MimeType, Data string }
	Frame      screen.Frame
	Error      string
}

// postRaw posts body exactly as given (not re-encoded) and returns the
// status and the answer.
func (e *env) postRaw(path, body string) (int, []byte) {
	e.t.Helper()
	code, b, err := e.post(path, body)
	if err != nil {
		e.t.Fatalf("POST %s: %v", path, err)
	}
	return code, b
}

// post is postRaw returning its error, for goroutines other than the
// test's.
func (e *env) post(path, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(e.t.Context(), "POST", e.base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// createExec creates an executor session from spec and returns the
// status and the answer.
func (e *env) createExec(spec map[string]any) (int, execCreated) {
	e.t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		e.t.Fatal(err)
	}
	code, out := e.postRaw("/executor/sessions", string(b))
	var a execCreated
	if err := json.Unmarshal(out, &a); err != nil {
		e.t.Fatalf("POST /executor/sessions = %d %s", code, out)
	}
	return code, a
}

// execAt creates an Anthropic executor session on startURL and returns
// its id and the colour at the middle of its first screenshot.
func (e *env) execAt(startURL string) (string, [3]uint8) {
	e.t.Helper()
	code, a := e.createExec(map[string]any{"provider": "anthropic", "start_url": startURL})
	data, err := base64.StdEncoding.DecodeString(a.Screenshot.Data)
	if code != http.StatusOK || err != nil || a.ID == "" {
		e.t.Fatalf("POST /executor/sessions on %s = %d %q %s, %v", startURL, code, a.ID, a.Error, err)
	}
	return a.ID, isolatetest.Centre(e.t, data)
}

// fake returns the in-memory display of the nth session the env opened.
func (e *env) fake(n int) *screentest.Fake {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if n >= len(e.fakes) {
		e.t.Fatalf("display %d was never opened (%d were)", n, len(e.fakes))
	}
	return e.fakes[n]
}

// clicks counts the clicks a display performed.
func clicks(f *screentest.Fake) int {
	n := 0
	for _, m := range f.Performed() {
		if m.Kind == actions.Click {
			n++
		}
	}
	return n
}

// goish reports whether a message shows Go types or values, or internal
// error text, which a client must never see.
func goish(s string) bool {
	for _, g := range []string{"Go struct", "Go value", "map[", "interface {}", "struct {", "[]interface", "json: cannot", "internal error", "panic"} {
		if strings.Contains(s, g) {
			return true
		}
	}
	return false
}

// errorOf reads the "error" of an answer.
func errorOf(b []byte) string {
	var a struct{ Error string }
	_ = json.Unmarshal(b, &a)
	return a.Error
}

// TestExecutorCallIDs: a call must have an id; posting a call id again
// with the same call (however it is spaced or ordered) returns the first
// result without running it twice; posting it with another call is 409.
func TestExecutorCallIDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		provider string
		call     string // the call, with id c1
		again    string // the same call, re-encoded
		other    string // another call with id c1
		noID     []string
		idField  string // what the native result pairs by
	}{
		{"anthropic",
			`{"type":"tool_use","id":"c1","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}`,
			`{ "input": {"coordinate": [10, 20], "action": "left_click"}, "name": "computer", "id": "c1", "type": "tool_use" }`,
			`{"type":"tool_use","id":"c1","name":"computer","input":{"action":"left_click","coordinate":[30,40]}}`,
			[]string{
				`{"type":"tool_use","id":"","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}`,
				`{"type":"tool_use","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}`,
				`{"type":"tool_use","id":7,"name":"computer","input":{"action":"left_click","coordinate":[10,20]}}`,
			},
			`"tool_use_id":"c1"`},
		{"openai",
			`{"type":"computer_call","call_id":"c1","actions":[{"type":"click","button":"left","x":10,"y":20}],"pending_safety_checks":[]}`,
			`{"pending_safety_checks": [], "actions": [{"y": 20, "x": 10, "button": "left", "type": "click"}], "call_id": "c1", "type": "computer_call"}`,
			`{"type":"computer_call","call_id":"c1","actions":[{"type":"click","button":"left","x":30,"y":40}],"pending_safety_checks":[]}`,
			[]string{
				`{"type":"computer_call","call_id":"","actions":[{"type":"click","button":"left","x":10,"y":20}]}`,
				`{"type":"computer_call","actions":[{"type":"click","button":"left","x":10,"y":20}]}`,
				`{"type":"computer_call","call_id":7,"actions":[{"type":"click","button":"left","x":10,"y":20}]}`,
			},
			`"call_id":"c1"`},
		{"gemini",
			`{"functionCall":{"id":"c1","name":"click_at","args":{"x":500,"y":300}}}`,
			`{"functionCall": {"args": {"y": 300, "x": 500}, "name": "click_at", "id": "c1"}}`,
			`{"functionCall":{"id":"c1","name":"click_at","args":{"x":100,"y":300}}}`,
			[]string{
				`{"functionCall":{"id":7,"name":"click_at","args":{"x":500,"y":300}}}`,
				`{"functionCall":{"id":"c9","args":{"x":500,"y":300}}}`,
				`{"text":"click at 500,300"}`,
			},
			`"id":"c1"`},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{fake: true})
			code, s := e.createExec(map[string]any{"provider": tt.provider, "approvals": map[string]any{"supervise": "none"}})
			if code != http.StatusOK {
				t.Fatalf("create = %d %+v", code, s)
			}
			path := "/executor/sessions/" + s.ID + "/call?wait=30s"
			code, first := e.postRaw(path, tt.call)
			if code != http.StatusOK || !strings.Contains(string(first), tt.idField) || errorOf(first) != "" {
				t.Fatalf("call = %d %.300s, want 200 with a result for c1", code, first)
			}
			code, again := e.postRaw(path, tt.again)
			if code != http.StatusOK || !bytes.Equal(again, first) {
				t.Errorf("the same call again = %d %.300s, want 200 with the first result", code, again)
			}
			code, other := e.postRaw(path, tt.other)
			if msg := errorOf(other); code != http.StatusConflict || !strings.Contains(msg, `call id "c1" was posted before with a different call`) {
				t.Errorf("another call with id c1 = %d %s, want 409 with the reason", code, other)
			}
			for _, raw := range tt.noID {
				code, out := e.postRaw(path, raw)
				if msg := errorOf(out); code != http.StatusBadRequest || !strings.Contains(msg, "the call cannot be answered") || goish(msg) {
					t.Errorf("call %s = %d %s, want 400 saying why, in JSON's terms", raw, code, out)
				}
			}
			if n := clicks(e.fake(0)); n != 1 {
				t.Errorf("the display performed %d clicks, want 1: only the first call ran", n)
			}
			next := strings.Replace(tt.other, `"c1"`, `"c2"`, 1)
			if code, out := e.postRaw(path, next); code != http.StatusOK || errorOf(out) != "" {
				t.Errorf("a new call after the refused ones = %d %.300s, want 200", code, out)
			}
		})
	}
}

// TestExecutorMalformedArguments: arguments of the wrong shape (Gemini's
// args as a JSON string, a coordinate that is not numbers, a safety
// check list that is not a list) are that call's error result, in the
// provider's shape and in JSON's terms; the session runs on.
func TestExecutorMalformedArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		provider string
		call     string
		native   []string // substrings of the native result
		want     string   // substring of the error
		next     string   // a good call after it
	}{
		{"gemini", `{"functionCall":{"id":"fc_1","name":"click","args":"{\"x\":500,\"y\":300}"}}`,
			[]string{`"id":"fc_1"`, `"name":"click"`, `"error":"`, `click: args must be a JSON object`},
			`args must be a JSON object of the function's arguments, got the string`,
			`{"functionCall":{"id":"fc_2","name":"click","args":{"x":500,"y":300}}}`},
		{"gemini", `{"functionCall":{"id":"fc_1","name":"type_text_at","args":{"x":"left","y":3,"text":"hi"}}}`,
			[]string{`"id":"fc_1"`, `"name":"type_text_at"`},
			`x is the string "left", want a number`,
			`{"functionCall":{"id":"fc_2","name":"click_at","args":{"x":500,"y":300}}}`},
		{"anthropic", `{"type":"tool_use","id":"t1","name":"computer","input":{"action":"left_click","coordinate":["10","20"]}}`,
			[]string{`"tool_use_id":"t1"`, `"is_error":true`},
			`"coordinate" must be [x, y]`,
			`{"type":"tool_use","id":"t2","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}`},
		{"anthropic", `{"type":"tool_use","id":"t1","name":"computer","input":"{\"action\":\"left_click\"}"}`,
			[]string{`"tool_use_id":"t1"`, `"is_error":true`},
			`the input must be a JSON object`,
			`{"type":"tool_use","id":"t2","name":"computer","input":{"action":"screenshot"}}`},
		{"openai", `{"type":"computer_call","call_id":"c1","actions":[{"type":"click","x":10,"y":20}],"pending_safety_checks":"none"}`,
			[]string{`"call_id":"c1"`, `"type":"computer_call_output"`},
			`"pending_safety_checks" must be an array`,
			`{"type":"computer_call","call_id":"c2","actions":[{"type":"click","x":10,"y":20}]}`},
		{"openai", `{"type":"computer_call","call_id":"c1","actions":[{"type":"scroll","x":10,"y":20,"scroll_x":0,"scroll_y":"far"}]}`,
			[]string{`"call_id":"c1"`},
			`"scroll_y" must be a number, got a string`,
			`{"type":"computer_call","call_id":"c2","actions":[{"type":"wait"}]}`},
	}
	e := newEnv(t, envOpts{fake: true})
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			code, s := e.createExec(map[string]any{"provider": tt.provider, "approvals": map[string]any{"supervise": "none"}})
			if code != http.StatusOK {
				t.Fatalf("create = %d %+v", code, s)
			}
			path := "/executor/sessions/" + s.ID + "/call?wait=30s"
			code, out := e.postRaw(path, tt.call)
			var a execAnswer
			if code != http.StatusOK || json.Unmarshal(out, &a) != nil || a.Status != "done" {
				t.Fatalf("call %s = %d %.300s, want 200 done with an error result", tt.call, code, out)
			}
			if !strings.Contains(a.Error, tt.want) || goish(a.Error) || goish(string(a.Result)) {
				t.Errorf("call %s: error %q, want one containing %q, in JSON's terms", tt.call, a.Error, tt.want)
			}
			for _, w := range tt.native {
				if !strings.Contains(string(a.Result), w) {
					t.Errorf("call %s: native result lacks %s: %s", tt.call, w, regexp.MustCompile(`"data":"[^"]*"`).ReplaceAll(a.Result, []byte(`"data":"..."`)))
				}
			}
			code, out = e.postRaw(path, tt.next)
			a = execAnswer{}
			if json.Unmarshal(out, &a) != nil || code != http.StatusOK || a.Status != "done" || a.Error != "" {
				t.Errorf("the next call = %d %.300s, want 200 done: the session runs on", code, out)
			}
		})
	}
}

// TestExecutorGeminiWithoutIDs: Gemini may leave call ids out. Each such
// call runs (none is taken for another), gets its own toolCallId, and is
// answered by name without an id, as Gemini pairs them.
func TestExecutorGeminiWithoutIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{fake: true})
	code, s := e.createExec(map[string]any{"provider": "gemini", "approvals": map[string]any{"supervise": "none"}})
	if code != http.StatusOK {
		t.Fatalf("create = %d %+v", code, s)
	}
	call := `{"functionCall":{"name":"click_at","args":{"x":500,"y":300}}}`
	var ids []string
	for range 2 {
		code, out := e.postRaw("/executor/sessions/"+s.ID+"/call?wait=30s", call)
		var a execAnswer
		if code != http.StatusOK || json.Unmarshal(out, &a) != nil || a.Status != "done" || a.Error != "" {
			t.Fatalf("call = %d %.300s, want 200 done", code, out)
		}
		var part struct {
			FunctionResponse map[string]json.RawMessage `json:"functionResponse"`
		}
		if err := json.Unmarshal(a.Result, &part); err != nil {
			t.Fatal(err)
		}
		if _, hasID := part.FunctionResponse["id"]; hasID || string(part.FunctionResponse["name"]) != `"click_at"` {
			t.Errorf("result = %.300s, want a functionResponse for click_at without an id", a.Result)
		}
		ids = append(ids, a.ToolCallID)
	}
	if ids[0] == "" || ids[0] == ids[1] {
		t.Errorf("toolCallIds = %q, want two different ones", ids)
	}
	if n := clicks(e.fake(0)); n != 2 {
		t.Errorf("the display performed %d clicks, want 2", n)
	}
	resp := e.request("GET", "/executor/sessions/"+s.ID+"/calls/"+ids[1]+"?wait=1s", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET the second call's result = %d, want 200", resp.StatusCode)
	}
}

// TestExecutorImageSize: an executor session's screenshots are the size
// the provider's model takes without resizing (Anthropic shrinks a
// 1920x1080 image to 1456x819, and Claude answers in that space), the
// create answer says so, and coordinates map from that space to the
// display; display.image overrides it.
func TestExecutorImageSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		spec      map[string]any
		want      screen.Size
		click     string  // a call at the image's centre, or ""
		cx, cy    float64 // where the click must land, CSS px
		clickedOn int     // the display's index
	}{
		{"anthropic 1920x1080", map[string]any{"provider": "anthropic", "display": map[string]any{"width": 1920, "height": 1080}},
			screen.Size{W: 1456, H: 819},
			`{"type":"tool_use","id":"t1","name":"computer","input":{"action":"left_click","coordinate":[728,409]}}`, 960, 540, 0},
		{"anthropic opus 4.7", map[string]any{"provider": "anthropic", "model": map[string]any{"name": "claude-opus-4-7"},
			"display": map[string]any{"width": 1920, "height": 1080}}, screen.Size{W: 1920, H: 1080}, "", 0, 0, 1},
		{"anthropic default display", map[string]any{"provider": "anthropic"}, screen.Size{W: 1280, H: 800}, "", 0, 0, 2},
		{"anthropic override", map[string]any{"provider": "anthropic",
			"display": map[string]any{"width": 1920, "height": 1080, "image": map[string]any{"w": 960, "h": 540}}},
			screen.Size{W: 960, H: 540},
			`{"type":"tool_use","id":"t1","name":"computer","input":{"action":"left_click","coordinate":[480,270]}}`, 960, 540, 3},
		{"gemini 1920x1080", map[string]any{"provider": "gemini", "display": map[string]any{"width": 1920, "height": 1080}},
			screen.Size{W: 1440, H: 810},
			`{"functionCall":{"id":"f1","name":"click_at","args":{"x":500,"y":500}}}`, 960, 540, 4},
		{"openai 1920x1080", map[string]any{"provider": "openai", "display": map[string]any{"width": 1920, "height": 1080}},
			screen.RuleFor("openai", "").Fit(screen.Size{W: 1920, H: 1080}), "", 0, 0, 5},
	}
	e := newEnv(t, envOpts{fake: true})
	for _, tt := range tests { // in order: each opens the next display
		t.Run(tt.name, func(t *testing.T) {
			tt.spec["approvals"] = map[string]any{"supervise": "none"}
			code, s := e.createExec(tt.spec)
			if code != http.StatusOK {
				t.Fatalf("create = %d %+v", code, s)
			}
			if s.Image != tt.want || s.Frame.Sent != tt.want {
				t.Errorf("create answer: image %v, frame.sent %v, want %v", s.Image, s.Frame.Sent, tt.want)
			}
			data, err := base64.StdEncoding.DecodeString(s.Screenshot.Data)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := png.DecodeConfig(bytes.NewReader(data))
			if err != nil || cfg.Width != tt.want.W || cfg.Height != tt.want.H {
				t.Errorf("screenshot is %dx%d (%v), want %v", cfg.Width, cfg.Height, err, tt.want)
			}
			if tt.click == "" {
				return
			}
			code, out := e.postRaw("/executor/sessions/"+s.ID+"/call?wait=30s", tt.click)
			if code != http.StatusOK || errorOf(out) != "" {
				t.Fatalf("click = %d %.300s", code, out)
			}
			var done []actions.Point
			for _, m := range e.fake(tt.clickedOn).Performed() {
				if m.Kind == actions.Click {
					done = append(done, m.At)
				}
			}
			if len(done) != 1 || math.Abs(done[0].X-tt.cx) > 2 || math.Abs(done[0].Y-tt.cy) > 2 {
				t.Errorf("clicks on the display at %v, want one at about (%g, %g) CSS px", done, tt.cx, tt.cy)
			}
		})
	}
}

// TestExecutorImageRefused: a display.image that would stretch, upscale
// or shrink the screenshot to nothing, or is spelt wrong, is 400 with the
// reason; so is one on an agent session.
func TestExecutorImageRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{fake: true})
	display := func(image any) map[string]any {
		return map[string]any{"provider": "anthropic", "display": map[string]any{"width": 1920, "height": 1080, "image": image}}
	}
	for _, tt := range []struct {
		spec map[string]any
		want string
	}{
		{display(map[string]any{"w": 0, "h": 0}), `display.image 0x0: want {"w", "h"}`},
		{display(map[string]any{"w": 1456}), `display.image 1456x0: want {"w", "h"}`},
		{display(map[string]any{"w": 2560, "h": 1440}), "larger than the 1920x1080 display"},
		{display(map[string]any{"w": 1000, "h": 1000}), "does not keep the 1920x1080 display's aspect: for w 1000, h is 56"},
		{display(map[string]any{"w": 96, "h": 54}), "each side must be at least 100 px"},
		{display(map[string]any{"width": 960, "height": 540}), `unknown field`},
		{display("1456x819"), "bad JSON body"},
		{map[string]any{"provider": "anthropic", "model": map[string]any{"provider": "openai"}}, `model.provider "openai" differs from provider "anthropic"`},
	} {
		code, out := e.createExec(tt.spec)
		if code != http.StatusBadRequest || !strings.Contains(out.Error, tt.want) {
			t.Errorf("create %v = %d %q, want 400 containing %q", tt.spec["display"], code, out.Error, tt.want)
		}
	}
	b, _ := json.Marshal(spec("hi", map[string]any{"display": map[string]any{"width": 1024, "height": 640, "image": map[string]any{"w": 512, "h": 320}}}))
	req, _ := http.NewRequestWithContext(t.Context(), "PUT", e.base+"/session", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(errorOf(body), "display.image is for executor sessions") {
		t.Errorf("PUT /session with display.image = %d %s, want 400", resp.StatusCode, body)
	}
}
