package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

// DecodeCall decodes one computer_call output item that a client's own agent
// loop received from the Responses API, such as
//
//	{"type":"computer_call","call_id":"call_1","actions":[{"type":"click","x":10,"y":20}],"pending_safety_checks":[]}
//
// into a Call in the pixels of the screenshots the client sends
// (screen.Image), with the item's pending_safety_checks as SafetyChecks. A
// GA item carries an "actions" batch, a preview item one "action"; Name is
// the tool ("computer" or "computer_use_preview"). display is the
// screenshot size; when it is not empty, a point outside it is an error.
//
// A malformed item (not JSON, not a computer_call, an action that does
// not decode, a field of the wrong type) is an error wrapping
// actions.ErrInvalid, and the Call returned with it carries the error in
// DecodeErr and as much as was read (ID, Raw, SafetyChecks), so that the
// caller can still answer the model with EncodeResult. The Call has an ID
// only when the item has a usable call_id (a non-empty string).
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
		err = fmt.Errorf("%w: a computer_call item must be a JSON object, got %s", actions.ErrInvalid, jsonType(raw))
		return fail(harness.Call{Space: screen.Image, Raw: raw}, err)
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
	var typ string
	if present(head.Type) && json.Unmarshal(head.Type, &typ) != nil {
		return fail(base, fmt.Errorf(`%w: "type" must be a string, got %s`, actions.ErrInvalid, jsonType(head.Type)))
	}
	call, _ := computerCall(raw, string(name))
	switch {
	case typ != "computer_call":
		call.DecodeErr = fmt.Errorf(`%w: item type %s, want "computer_call"`, actions.ErrInvalid, typeName(typ))
	case call.DecodeErr == nil:
		call.DecodeErr = within(call.Actions, display)
	}
	if call.DecodeErr != nil {
		call.Actions = nil
	}
	return call, call.DecodeErr
}

// EncodeResult answers c with r as a computer_call_output item paired to
// c.ID: r's fresh screenshot as a data URL (with the page's URL as
// current_url), and acknowledged_safety_checks holding those of c's
// pending checks that r.Acknowledged approves. A computer_call_output has
// no place for text: ResultMessage has the error and notes. A call of an
// application-side tool (one with Input) is answered with a
// function_call_output holding r.Output.
//
// r must carry a screenshot (Shot), unless c is an application-side call.
func EncodeResult(c harness.Call, r harness.Result) (json.RawMessage, error) {
	if c.ID == "" {
		return nil, errors.New("openai: encode result: the call has no call_id")
	}
	if r.CallID != "" && r.CallID != c.ID {
		return nil, fmt.Errorf("openai: encode result: result is for call %q, not %q", r.CallID, c.ID)
	}
	p := pending{id: c.ID, actions: len(c.Actions), checks: c.SafetyChecks, client: c.Input != nil}
	var it item
	if p.client {
		it = clientOutput(r, p)
	} else {
		if r.Shot == nil {
			return nil, fmt.Errorf("openai: encode result for %s: a computer_call_output needs a screenshot", c.ID)
		}
		pic, err := pictureOf(r.Shot)
		if err != nil {
			return nil, fmt.Errorf("openai: encode result for %s: %w", c.ID, err)
		}
		it, _ = computerOutput(r, p, pic)
	}
	b, err := json.Marshal(it.p)
	if err != nil {
		return nil, fmt.Errorf("openai: encode result for %s: %w", c.ID, err)
	}
	return b, nil
}

// ResultMessage is the text a computer_call_output cannot carry (r's error,
// notes, pointer position and display events), as the user message item
// that the Model sends after the outputs: "computer_call <id>: <text>" per
// line. It is nil when there is nothing to say.
func ResultMessage(c harness.Call, r harness.Result) json.RawMessage {
	if c.Input != nil {
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
