package openai

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/internal/imagejson"
	"github.com/spotter-harness/spotter/screen"
)

// DecodeCall decodes one output item that a client's own agent loop
// received from the Responses API into a Call in the pixels of the
// screenshots the client sends (screen.Image). It reads what a Model
// declares to OpenAI: the computer tool, and the browser actions that
// Config.Functions declares as function tools (BrowserFunctions, which a
// task's browser_tools adds).
//
// A computer_call item, such as
//
//	{"type":"computer_call","call_id":"call_1","actions":[{"type":"click","x":10,"y":20}],"pending_safety_checks":[]}
//
// carries a GA "actions" batch or a preview "action", and its
// pending_safety_checks become SafetyChecks; Name is the tool ("computer"
// or "computer_use_preview"). display is the screenshot size; when it is
// not empty, a point outside it is an error.
//
// A function_call item of a browser function, such as
//
//	{"type":"function_call","call_id":"call_2","name":"dialog","arguments":"{\"accept\":true}"}
//
// is decoded by a Model's own decoder: its arguments are a JSON string
// holding an object, Name is the function's name, and a function the Model
// does not declare (navigate, say, or an application-side tool) is an
// error that lists the ones it does: list_tabs, switch_tab, close_tab,
// dialog and upload.
//
// A malformed item (not JSON, neither item type, an action or arguments
// that do not decode, a field of the wrong type) is an error wrapping
// actions.ErrInvalid, and the Call returned with it carries the error in
// DecodeErr and as much as was read (ID, Name, Raw, SafetyChecks), so that
// the caller can still answer the model with EncodeResult. The Call has an
// ID only when the item has a usable call_id (a non-empty string).
func DecodeCall(raw json.RawMessage, display screen.Size) (harness.Call, error) {
	raw = bytes.Clone(raw)
	var head struct {
		Type   json.RawMessage `json:"type"`
		CallID json.RawMessage `json:"call_id"`
		Action json.RawMessage `json:"action"`
		Checks json.RawMessage `json:"pending_safety_checks"`
	}
	fail := func(c harness.Call, err error) (harness.Call, error) {
		c.DecodeErr, c.Actions = err, nil
		return c, err
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		err = fmt.Errorf("%w: a computer_call or function_call item must be a JSON object, got %s", actions.ErrInvalid, jsonType(raw))
		return fail(harness.Call{Space: screen.Image, Raw: raw}, err)
	}
	var typ string
	typeErr := present(head.Type) && json.Unmarshal(head.Type, &typ) != nil
	if typ == "function_call" {
		return decodeFunctionCall(raw)
	}
	name := ToolGA
	if present(head.Action) {
		name = ToolPreview
	}
	base := harness.Call{Name: string(name), Space: screen.Image, Raw: raw}
	if present(head.CallID) && json.Unmarshal(head.CallID, &base.ID) != nil {
		return fail(base, fmt.Errorf(`%w: "call_id" must be a string, got %s`, actions.ErrInvalid, jsonType(head.CallID)))
	}
	if present(head.Checks) {
		var checks []struct{ ID, Code, Message string }
		if json.Unmarshal(head.Checks, &checks) != nil {
			return fail(base, fmt.Errorf(`%w: "pending_safety_checks" must be an array of {"id", "code", "message"} strings, got %s`,
				actions.ErrInvalid, jsonType(head.Checks)))
		}
	}
	if typeErr {
		return fail(base, fmt.Errorf(`%w: "type" must be a string, got %s`, actions.ErrInvalid, jsonType(head.Type)))
	}
	call, _ := computerCall(raw, string(name))
	switch {
	case typ != "computer_call":
		call.DecodeErr = fmt.Errorf(`%w: item type %s, want "computer_call" or "function_call"`, actions.ErrInvalid, typeName(typ))
	case call.DecodeErr == nil:
		call.DecodeErr = within(call.Actions, display)
	}
	if call.DecodeErr != nil {
		call.Actions = nil
	}
	return call, call.DecodeErr
}

// decodeFunctionCall decodes a function_call item with the decoder of a
// Model that declares the browser functions, after checking the types of
// the fields it reads, so that an error is in JSON's words, not Go's.
func decodeFunctionCall(raw json.RawMessage) (harness.Call, error) {
	var head struct {
		CallID    json.RawMessage `json:"call_id"`
		Name      json.RawMessage `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	call := harness.Call{Space: screen.Image, Raw: raw}
	fail := func(err error) (harness.Call, error) {
		call.DecodeErr, call.Actions = err, nil
		return call, err
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return fail(fmt.Errorf("%w: a function_call item must be a JSON object, got %s", actions.ErrInvalid, jsonType(raw)))
	}
	if present(head.CallID) && json.Unmarshal(head.CallID, &call.ID) != nil {
		return fail(fmt.Errorf(`%w: "call_id" must be a string, got %s`, actions.ErrInvalid, jsonType(head.CallID)))
	}
	if present(head.Name) && json.Unmarshal(head.Name, &call.Name) != nil {
		return fail(fmt.Errorf(`%w: the function_call's "name" must be a string, got %s`, actions.ErrInvalid, jsonType(head.Name)))
	}
	var args string
	if present(head.Arguments) && json.Unmarshal(head.Arguments, &args) != nil {
		return fail(fmt.Errorf(`%w: %s: "arguments" must be a string holding a JSON object, as the Responses API sends it, got %s`,
			actions.ErrInvalid, typeName(call.Name), jsonType(head.Arguments)))
	}
	m, err := executorModel()
	if err != nil {
		return fail(fmt.Errorf("%w: %s: %v", actions.ErrInvalid, typeName(call.Name), err))
	}
	decoded, _ := m.functionCall(raw)
	decoded.Raw = raw
	call = decoded
	if call.DecodeErr == nil && call.ID == "" {
		call.DecodeErr = fmt.Errorf(`%w: function_call has no "call_id"`, actions.ErrInvalid)
	}
	if call.DecodeErr != nil {
		return fail(call.DecodeErr)
	}
	return call, nil
}

// executorModel is a Model that declares the browser functions, as a
// task's browser_tools does: what DecodeCall accepts is what it declares,
// decoded by the same code. It is built once, with no I/O; its API key is
// never sent.
var executorModel = sync.OnceValues(func() (*Model, error) {
	return New(Config{APIKey: "executor", Functions: BrowserFunctions()})
})

// isFunctionCall reports whether raw is a function_call item.
func isFunctionCall(raw json.RawMessage) bool {
	var head struct {
		Type json.RawMessage `json:"type"`
	}
	var typ string
	return json.Unmarshal(raw, &head) == nil && json.Unmarshal(head.Type, &typ) == nil && typ == "function_call"
}

// EncodeResult is EncodeResultFor with the default model (DefaultModel,
// which uses the GA tool).
func EncodeResult(c harness.Call, r harness.Result) (json.RawMessage, error) {
	return EncodeResultFor("", c, r)
}

// EncodeResultFor answers c with r, for a client whose model is named
// model (as Config.Model; "" means DefaultModel), as a Model of that name
// answers it:
//
//   - a computer_call with a computer_call_output item paired to c.ID: r's
//     fresh screenshot as a data URL (with the page's URL as current_url),
//     and acknowledged_safety_checks holding those of c's pending checks
//     that r.Acknowledged approves. A computer_call_output has no place
//     for text: ResultMessage has the error and notes.
//   - a function_call of a browser function with a function_call_output
//     item whose output is a list: an input_text saying what happened (the
//     error, the notes; "ok" when there is nothing to say), then the fresh
//     screenshot as an input_image with the image detail the Model sends
//     (Config.ImageDetail's default: "original" for the GA tool, "auto" for
//     computer-use-preview).
//   - a call of an application-side tool (one with Input) with a
//     function_call_output holding r.Output.
//
// r must carry a screenshot (Shot), unless c is an application-side call.
func EncodeResultFor(model string, c harness.Call, r harness.Result) (json.RawMessage, error) {
	if c.ID == "" {
		return nil, errors.New("openai: encode result: the call has no call_id")
	}
	if r.CallID != "" && r.CallID != c.ID {
		return nil, fmt.Errorf("openai: encode result: result is for call %q, not %q", r.CallID, c.ID)
	}
	p := pending{id: c.ID, actions: len(c.Actions), checks: c.SafetyChecks, client: c.Input != nil,
		function: c.Input != nil || isFunctionCall(c.Raw)}
	if !p.client && r.Shot == nil {
		return nil, fmt.Errorf("openai: encode result for %s: a %s needs a screenshot", c.ID, outputType(p))
	}
	b, err := imagejson.Marshal(r, func(r harness.Result) ([]byte, error) {
		if p.client {
			return json.Marshal(clientOutput(r, p).p)
		}
		pic, err := pictureOf(r.Shot)
		if err != nil {
			return nil, err
		}
		var it item
		if p.function {
			detail := imageDetailFor(toolFor(cmp.Or(model, DefaultModel)))
			it = functionOutput(r, p, pic, resultText(r, p, ""), detail)
		} else {
			it, _ = computerOutput(r, p, pic)
		}
		return json.Marshal(it.p)
	})
	if err != nil {
		return nil, fmt.Errorf("openai: encode result for %s: %w", c.ID, err)
	}
	return b, nil
}

func outputType(p pending) string {
	if p.function {
		return "function_call_output"
	}
	return "computer_call_output"
}

// NeedsShot reports whether the output item answering c must hold a
// screenshot: every call but an application-side tool's. When none could
// be taken after c, the caller answers with the latest one taken before
// it, and says so in r's notes.
func NeedsShot(c harness.Call) bool { return c.Input == nil }

// ResultMessage is the text a computer_call_output cannot carry (r's error,
// notes, pointer position and display events), as the user message item
// that the Model sends after the outputs: "computer_call <id>: <text>" per
// line. It is nil when there is nothing to say, and for a function_call,
// whose function_call_output carries its text itself.
func ResultMessage(c harness.Call, r harness.Result) json.RawMessage {
	if c.Input != nil || isFunctionCall(c.Raw) {
		return nil
	}
	var lines []string
	for _, t := range resultText(r, pending{id: c.ID, actions: len(c.Actions)}, "") {
		lines = append(lines, fmt.Sprintf("computer_call %s: %s", c.ID, t))
	}
	if len(lines) == 0 {
		return nil
	}
	b, err := json.Marshal(textMessage(strings.Join(lines, "\n")).p)
	if err != nil {
		return nil // a text message always marshals
	}
	return b
}

// within checks that the points of as lie on an image of size s; an empty
// s allows any point.
func within(as []actions.Action, s screen.Size) error {
	if s.Empty() {
		return nil
	}
	for _, a := range as {
		pts := a.Path
		if a.HasAt {
			pts = append(pts[:len(pts):len(pts)], a.At)
		}
		if a.Kind == actions.Zoom {
			pts = append(pts[:len(pts):len(pts)], a.Region.Min, a.Region.Max)
		}
		for _, p := range pts {
			if p.X < 0 || p.Y < 0 || p.X > float64(s.W) || p.Y > float64(s.H) {
				return fmt.Errorf("%w: %s: point (%g, %g) is outside the %dx%d display", actions.ErrInvalid, a.Kind, p.X, p.Y, s.W, s.H)
			}
		}
	}
	return nil
}
