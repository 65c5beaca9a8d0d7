package gemini_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"image/color"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/gemini/geminitest"
	"github.com/spotter-harness/spotter/screen"
)

func TestDecodePart(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		set  gemini.FunctionSet
		id   string
		want []actions.Action
	}{
		{`{"functionCall":{"id":"fc_1","name":"click_at","args":{"x":500,"y":300}}}`, gemini.FunctionsAuto, "fc_1",
			[]actions.Action{{Kind: actions.Click, At: actions.Pt(500, 300), HasAt: true}}},
		{`{"functionCall":{"id":"fc_1","name":"click","args":{"x":5,"y":6}},"thoughtSignature":"c2ln"}`, gemini.FunctionsAuto, "fc_1",
			[]actions.Action{{Kind: actions.Click, At: actions.Pt(5, 6), HasAt: true}}},
		{`{"functionCall":{"id":"fc_2","name":"navigate","args":{"url":"https://a.test/"}}}`, gemini.FunctionsLegacy, "fc_2",
			[]actions.Action{{Kind: actions.Navigate, URL: "https://a.test/"}}},
		{`{"functionCall":{"id":"fc_3","name":"dialog","args":{"accept":true,"text":"Ada"}}}`, gemini.FunctionsLegacy, "fc_3",
			[]actions.Action{{Kind: actions.Dialog, Accept: true, Text: "Ada"}}},
		{`{"functionCall":{"id":"fc_4","name":"switch_tab","args":{"tab":1}}}`, gemini.FunctionsAuto, "fc_4",
			[]actions.Action{{Kind: actions.SwitchTab, Tab: 1}}},
		{`{"functionCall":{"id":"fc_5","name":"upload","args":{"files":["/tmp/cv.pdf"]}}}`, gemini.Functions35, "fc_5",
			[]actions.Action{{Kind: actions.Upload, Files: []string{"/tmp/cv.pdf"}}}},
		{`{"functionCall":{"id":"fc_6","name":"list_tabs"}}`, gemini.FunctionsAuto, "fc_6",
			[]actions.Action{{Kind: actions.ListTabs}}},
	} {
		c, err := gemini.DecodePart(json.RawMessage(tt.raw), tt.set)
		if err != nil {
			t.Errorf("DecodePart(%s, %v) error: %v", tt.raw, tt.set, err)
			continue
		}
		if c.ID != tt.id || c.Space != screen.Grid1000 || string(c.Raw) != tt.raw {
			t.Errorf("DecodePart(%s) = id %q, space %v, raw %s; want id %q", tt.raw, c.ID, c.Space, c.Raw, tt.id)
		}
		if diff := cmp.Diff(tt.want, c.Actions); diff != "" {
			t.Errorf("DecodePart(%s) actions (-want +got):\n%s", tt.raw, diff)
		}
	}
	c, err := gemini.DecodePart(json.RawMessage(`{"functionCall":{"id":"fc_9","name":"click_at","args":{"x":1,"y":2,"safety_decision":{"decision":"require_confirmation","explanation":"checkout"}}}}`), gemini.FunctionsAuto)
	if want := []harness.SafetyCheck{{ID: "fc_9", Code: "require_confirmation", Message: "checkout"}}; err != nil || !cmp.Equal(c.SafetyChecks, want) {
		t.Errorf("DecodePart(safety_decision) = %+v, %v, want checks %+v", c.SafetyChecks, err, want)
	}
}

func TestDecodePartErrors(t *testing.T) {
	for _, tt := range []struct {
		raw, id, want string
	}{
		{`x`, "", "must be a JSON object"},
		{`{"text":"hi"}`, "", `no "functionCall"`},
		{`{"functionCall":{"id":"f","args":{}}}`, "", "no name"},
		{`{"functionCall":{"id":"f","name":"fly","args":{}}}`, "f", `unknown function "fly"`},
		{`{"functionCall":{"id":"f","name":"key_down","args":{"key":"a"}}}`, "f", "not supported"},
		{`{"functionCall":{"id":"f","name":"click_at","args":{"x":"left"}}}`, "f", "click_at"},
		{`{"functionCall":{"id":"f","name":"click","args":{"x":1,"y":2,"safety_decision":"yes"}}}`, "f", "safety_decision"},
	} {
		c, err := gemini.DecodePart(json.RawMessage(tt.raw), gemini.FunctionsAuto)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, actions.ErrInvalid) {
			t.Errorf("DecodePart(%s) error = %v, want ErrInvalid containing %q", tt.raw, err, tt.want)
			continue
		}
		if c.ID != tt.id || c.DecodeErr == nil || c.Actions != nil {
			t.Errorf("DecodePart(%s) = call %q with DecodeErr %v and %d actions, want call %q with the error", tt.raw, c.ID, c.DecodeErr, len(c.Actions), tt.id)
		}
	}
}

func TestEncodeResult(t *testing.T) {
	c, err := gemini.DecodePart(json.RawMessage(`{"functionCall":{"name":"click_at","args":{"x":1,"y":2,"safety_decision":{"decision":"require_confirmation"}}}}`), gemini.FunctionsAuto)
	if err != nil {
		t.Fatal(err)
	}
	s := shot(t, "https://a.test/", 7)
	png := base64.StdEncoding.EncodeToString(tinyPNG(t, color.Gray{Y: 7}))
	for _, tt := range []struct {
		name string
		r    harness.Result
		want string
	}{
		{"approved", harness.Result{CallID: c.ID, Shot: s, Ran: 1, Acknowledged: c.SafetyChecks},
			`{"functionResponse":{"name":"click_at","parts":[{"inlineData":{"data":"` + png + `","mimeType":"image/png"}}],"response":{"safety_acknowledgement":"true","url":"https://a.test/"}}}`},
		{"denied", harness.Result{Shot: s, Err: errors.New("denied: a human said no")},
			`{"functionResponse":{"name":"click_at","parts":[{"inlineData":{"data":"` + png + `","mimeType":"image/png"}}],"response":{"error":"denied: a human said no","url":"https://a.test/"}}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := gemini.EncodeResult(c, tt.r)
			if err != nil {
				t.Fatalf("EncodeResult error: %v", err)
			}
			if diff := cmp.Diff(jsonValue(t, tt.want), jsonValue(t, string(got))); diff != "" {
				t.Errorf("EncodeResult (-want +got):\n%s", diff)
			}
		})
	}
	withID, _ := gemini.DecodePart(json.RawMessage(`{"functionCall":{"id":"fc_3","name":"take_screenshot"}}`), gemini.FunctionsAuto)
	got, err := gemini.EncodeResult(withID, harness.Result{Shot: s})
	if err != nil || !strings.Contains(string(got), `"id":"fc_3","name":"take_screenshot",`) {
		t.Errorf("EncodeResult(call with id) = %s, %v", got, err)
	}
	if _, err := gemini.EncodeResult(c, harness.Result{CallID: "other"}); err == nil {
		t.Errorf("EncodeResult(result for another call) = nil error")
	}
	client := harness.Call{ID: "fc_c", Name: "lookup_booking", Input: json.RawMessage(`{}`)}
	got, err = gemini.EncodeResult(client, harness.Result{Output: "booking 42"})
	if want := `{"functionResponse":{"id":"fc_c","name":"lookup_booking","response":{"output":"booking 42"}}}`; err != nil || !cmp.Equal(jsonValue(t, want), jsonValue(t, string(got))) {
		t.Errorf("EncodeResult(client call) = %s, %v, want %s", got, err, want)
	}
}

// jsonValue decodes s, so that JSON texts compare whatever their key order.
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

// TestDecodePartLikeModel: the executor reads every function a Model
// declares with Config.Browser, the predefined ones of its set and the
// browser functions, exactly as that Model reads them in a turn from
// Gemini: the same actions, safety checks, and an error for the same
// calls.
func TestDecodePartLikeModel(t *testing.T) {
	for _, tt := range []struct {
		model string
		set   gemini.FunctionSet
		calls []geminitest.Call
	}{
		{"gemini-2.5-computer-use-preview-10-2025", gemini.FunctionsLegacy, []geminitest.Call{
			{ID: "1", Name: "click_at", Args: map[string]any{"x": 500, "y": 300}},
			{ID: "2", Name: "type_text_at", Args: map[string]any{"x": 10, "y": 20, "text": "hi", "press_enter": true}},
			{ID: "3", Name: "scroll_document", Args: map[string]any{"direction": "down"}},
			{ID: "4", Name: "key_combination", Args: map[string]any{"keys": "Control+A"}},
			{ID: "5", Name: "navigate", Args: map[string]any{"url": "https://a.test/"}},
			{ID: "6", Name: "search"},
			{ID: "7", Name: "dialog", Args: map[string]any{"accept": true}},
			{ID: "8", Name: "list_tabs"},
			{ID: "9", Name: "click_at", Args: map[string]any{"x": 1, "y": 2, "safety_decision": map[string]any{"decision": "require_confirmation", "explanation": "pay"}}},
			{ID: "10", Name: "click_at", Args: map[string]any{"x": "1", "y": 2}},
			{ID: "11", Name: "click", Args: map[string]any{"x": 1, "y": 2}}, // a 3.5 function
			{ID: "12", Name: "upload", Args: map[string]any{"files": "cv.pdf"}},
		}},
		{"gemini-3.5-flash", gemini.Functions35, []geminitest.Call{
			{ID: "1", Name: "click", Args: map[string]any{"x": 500, "y": 300}},
			{ID: "2", Name: "hotkey", Args: map[string]any{"keys": []string{"Control", "c"}}},
			{ID: "3", Name: "scroll", Args: map[string]any{"x": 1, "y": 2, "direction": "up", "magnitude": 200}},
			{ID: "4", Name: "wait", Args: map[string]any{"seconds": 2}},
			{ID: "5", Name: "switch_tab", Args: map[string]any{"tab": 0}},
			{ID: "6", Name: "close_tab", Args: map[string]any{"tab": 2}},
			{ID: "7", Name: "upload", Args: map[string]any{"files": []string{"/tmp/cv.pdf"}}},
			{ID: "8", Name: "dialog", Args: map[string]any{"accept": false, "text": "no"}},
			{ID: "9", Name: "key_down", Args: map[string]any{"key": "Shift"}},
			{ID: "10", Name: "click_at", Args: map[string]any{"x": 1, "y": 2}}, // a legacy function
			{ID: "11", Name: "dialog", Args: map[string]any{"accept": "yes"}},
			{ID: "12", Name: "fly"},
		}},
	} {
		t.Run(tt.set.String(), func(t *testing.T) {
			srv := geminitest.NewServer(t, geminitest.Turn{Calls: tt.calls}.Reply())
			m := newModel(t, srv, gemini.Config{Model: tt.model, Browser: true})
			turn, err := m.Next(t.Context(), harness.Input{Task: "t", Shot: shot(t, "https://a.test/", 1)})
			if err != nil {
				t.Fatal(err)
			}
			if len(turn.Calls) != len(tt.calls) {
				t.Fatalf("the Model read %d calls, want %d", len(turn.Calls), len(tt.calls))
			}
			for i, c := range tt.calls {
				fc := map[string]any{"id": c.ID, "name": c.Name}
				if c.Args != nil {
					fc["args"] = c.Args // as geminitest sends it: no args when there are none
				}
				raw, err := json.Marshal(map[string]any{"functionCall": fc})
				if err != nil {
					t.Fatal(err)
				}
				want := turn.Calls[i]
				got, err := gemini.DecodePart(raw, tt.set)
				if (err != nil) != (want.DecodeErr != nil) {
					t.Errorf("DecodePart(%s) error = %v, the Model's DecodeErr = %v", raw, err, want.DecodeErr)
					continue
				}
				if got.ID != want.ID || got.Name != want.Name {
					t.Errorf("DecodePart(%s) = id %q name %q, the Model's = %q %q", raw, got.ID, got.Name, want.ID, want.Name)
				}
				if diff := cmp.Diff(want.Actions, got.Actions); diff != "" {
					t.Errorf("DecodePart(%s) actions (-Model's +DecodePart's):\n%s", raw, diff)
				}
				if diff := cmp.Diff(want.SafetyChecks, got.SafetyChecks); diff != "" {
					t.Errorf("DecodePart(%s) safety checks (-Model's +DecodePart's):\n%s", raw, diff)
				}
				if _, err := gemini.EncodeResult(got, harness.Result{CallID: got.ID, Shot: shot(t, "https://a.test/", 2), Err: got.DecodeErr}); err != nil {
					t.Errorf("EncodeResult(DecodePart(%s)) error: %v", raw, err)
				}
			}
		})
	}
}

// TestDecodePartWithoutID: Gemini may leave a call's id out. Each such
// call gets its own fresh id, and its answer pairs it by name, without an
// id.
func TestDecodePartWithoutID(t *testing.T) {
	raw := json.RawMessage(`{"functionCall":{"name":"click_at","args":{"x":1,"y":2}}}`)
	a, errA := gemini.DecodePart(raw, gemini.FunctionsAuto)
	b, errB := gemini.DecodePart(raw, gemini.FunctionsAuto)
	if errA != nil || errB != nil || !strings.HasPrefix(a.ID, "gemini-call-") || !strings.HasPrefix(b.ID, "gemini-call-") || a.ID == b.ID {
		t.Fatalf("DecodePart(%s) twice = ids %q (%v) and %q (%v), want two fresh ids", raw, a.ID, errA, b.ID, errB)
	}
	out, err := gemini.EncodeResult(a, harness.Result{CallID: a.ID, Shot: shot(t, "https://a.test/", 1)})
	if err != nil {
		t.Fatal(err)
	}
	var part struct {
		FunctionResponse map[string]json.RawMessage `json:"functionResponse"`
	}
	if err := json.Unmarshal(out, &part); err != nil {
		t.Fatal(err)
	}
	if _, hasID := part.FunctionResponse["id"]; hasID || string(part.FunctionResponse["name"]) != `"click_at"` {
		t.Errorf("EncodeResult(call without id) = %s, want a functionResponse by name, without an id", out)
	}
}

// TestDecodePartMalformed: args that are not an object (a JSON string,
// say) and fields of the wrong type are errors in JSON's terms, never a
// Go type or value. A call with an id and a name keeps them and is
// answered with the error; one that cannot be answered has no id.
func TestDecodePartMalformed(t *testing.T) {
	for _, tt := range []struct {
		raw, id, want string
	}{
		{`{"functionCall":{"id":"f","name":"click","args":"{\"x\":1,\"y\":2}"}}`, "f", `click: args must be a JSON object of the function's arguments, got the string "{\"x\":1,\"y\":2}"`},
		{`{"functionCall":{"id":"f","name":"dialog","args":[true]}}`, "f", "dialog: args must be a JSON object of the function's arguments, got an array"},
		{`{"functionCall":{"id":"f","name":"click","args":{"x":1,"y":2}},"thoughtSignature":5}`, "f", "thoughtSignature is a JSON number, want a base64 string"},
		{`{"functionCall":{"id":"f","name":"upload","args":{"files":[1]}}}`, "f", `"files" must be a list of one or more file names`},
		{`{"functionCall":{"id":"f","name":"scroll","args":{"x":1,"y":2,"direction":"down","magnitude":"far"}}}`, "f", "magnitude is the string"},
		{`{"functionCall":{"id":7,"name":"click","args":{"x":1,"y":2}}}`, "", "the functionCall's id must be a string, got the number 7"},
		{`{"functionCall":{"id":"f","name":true,"args":{}}}`, "", "the functionCall's name must be a string, got the boolean true"},
		{`{"functionCall":"click"}`, "", `the functionCall must be a JSON object, got the string "click"`},
		{`{"functionCall":null}`, "", `no "functionCall"`},
		{`[1]`, "", "a part must be a JSON object, got an array"},
	} {
		c, err := gemini.DecodePart(json.RawMessage(tt.raw), gemini.FunctionsAuto)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, actions.ErrInvalid) {
			t.Errorf("DecodePart(%s) error = %v, want ErrInvalid containing %q", tt.raw, err, tt.want)
			continue
		}
		if goish(err.Error()) {
			t.Errorf("DecodePart(%s) error = %q, which speaks Go, not JSON", tt.raw, err)
		}
		if c.ID != tt.id || c.DecodeErr == nil || c.Actions != nil {
			t.Errorf("DecodePart(%s) = call %q with DecodeErr %v and %d actions, want call %q with the error", tt.raw, c.ID, c.DecodeErr, len(c.Actions), tt.id)
		}
		if c.ID == "" {
			continue
		}
		out, err := gemini.EncodeResult(c, harness.Result{CallID: c.ID, Shot: shot(t, "https://a.test/", 1), Err: c.DecodeErr})
		if err != nil || !strings.Contains(string(out), `"id":"`+c.ID+`"`) || !strings.Contains(string(out), `"error":`) {
			t.Errorf("EncodeResult(DecodePart(%s)) = %.200s, %v, want a functionResponse with the error for %s", tt.raw, out, err, c.ID)
		}
	}
}

// goish reports whether an error message shows Go types or values.
func goish(s string) bool {
	for _, g := range []string{"Go struct", "Go value", "map[", "interface {}", "struct {", "[]string", "[]interface", "float64", "json: cannot"} {
		if strings.Contains(s, g) {
			return true
		}
	}
	return false
}

// TestEncodeResultNotesOnce: harness.Executor puts a screenshot's events
// in the Result's Notes and keeps them on the Shot; the functionResponse
// says each once (list_tabs' list of tabs), and says events that are only
// on the Shot too.
func TestEncodeResultNotesOnce(t *testing.T) {
	c, err := gemini.DecodePart(json.RawMessage(`{"functionCall":{"id":"fc_1","name":"list_tabs"}}`), gemini.FunctionsAuto)
	if err != nil {
		t.Fatal(err)
	}
	tabs := "Open tabs (switch_tab and close_tab take the number): [0] shop (https://a.test/) (active)"
	s := shot(t, "https://a.test/", 7)
	s.Events = []string{tabs, "the page is now at https://a.test/"}
	got, err := gemini.EncodeResult(c, harness.Result{CallID: c.ID, Shot: s, Ran: 1, Notes: []string{tabs}})
	if err != nil {
		t.Fatal(err)
	}
	var part struct {
		FunctionResponse struct {
			Response struct {
				Notes []string `json:"notes"`
			} `json:"response"`
		} `json:"functionResponse"`
	}
	if err := json.Unmarshal(got, &part); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{tabs, "the page is now at https://a.test/"}, part.FunctionResponse.Response.Notes); diff != "" {
		t.Errorf("EncodeResult notes (-want +got):\n%s", diff)
	}
}
