package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/genai"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
)

// DecodePart decodes one part holding a functionCall that a client's own
// agent loop received from Gemini, such as
//
//	{"functionCall":{"id":"fc_1","name":"click_at","args":{"x":500,"y":300}}}
//
// into a Call in screen.Grid1000 coordinates, with a safety_decision that
// needs a human as SafetyChecks. set is the predefined function set of the
// client's model; FunctionsAuto picks it by the function's name (the names
// both sets share decode alike). key_down and key_up are refused, as in a
// Model. A functionCall without an id gets the Call.ID "gemini-call-1";
// EncodeResult answers it by name, as Gemini pairs calls without ids.
//
// A malformed part (not JSON, no functionCall, no name, an unknown
// function, arguments that do not decode) is an error wrapping
// actions.ErrInvalid, and the Call returned with it carries the error in
// DecodeErr and as much as was read (ID, Name, Raw), so that the caller can
// still answer the model with EncodeResult.
func DecodePart(raw json.RawMessage, set FunctionSet) (harness.Call, error) {
	raw = bytes.Clone(raw)
	fail := func(c harness.Call, err error) (harness.Call, error) {
		c.Raw, c.DecodeErr, c.Actions = raw, err, nil
		return c, err
	}
	var p genai.Part
	if err := json.Unmarshal(raw, &p); err != nil {
		return fail(harness.Call{}, fmt.Errorf("%w: a part must be a JSON object: %v", actions.ErrInvalid, err))
	}
	fc := p.FunctionCall
	switch {
	case fc == nil:
		return fail(harness.Call{}, fmt.Errorf(`%w: the part has no "functionCall"`, actions.ErrInvalid))
	case fc.Name == "":
		return fail(harness.Call{ID: fc.ID}, fmt.Errorf("%w: the functionCall has no name", actions.ErrInvalid))
	}
	if set == FunctionsAuto {
		set = setOf(fc.Name)
	}
	var excluded []string
	for n := range unsupported {
		excluded = append(excluded, n)
	}
	call, _ := decodePart(&p, 0, decoder{set: set, excluded: excluded, searchURL: DefaultSearchURL})
	if call.DecodeErr != nil {
		return fail(call, call.DecodeErr)
	}
	call.Raw = raw
	return call, nil
}

// setOf is the function set a function name belongs to: the 3.5 set's, or
// the legacy set's, or (for a name in neither) the 3.5 set, whose error
// lists its names.
func setOf(name string) FunctionSet {
	if !slices.Contains(names35, name) && slices.Contains(legacyNames, name) {
		return FunctionsLegacy
	}
	return Functions35
}

// EncodeResult answers c with r as a part holding a functionResponse
// paired to c's functionCall (same id, same name): response {url, error?,
// notes?, cursor?, safety_acknowledgement?} and r's fresh screenshot (then
// any zoom image) as inline data, as a Model sends it. The safety
// acknowledgement is sent only if r.Acknowledged approves every one of c's
// SafetyChecks. A call of an application-side tool (one with Input) is
// answered with response {"output": r.Output}, or {"error": ...}.
func EncodeResult(c harness.Call, r harness.Result) (json.RawMessage, error) {
	if c.ID == "" {
		return nil, errors.New("gemini: encode result: the call has no id")
	}
	if r.CallID != "" && r.CallID != c.ID {
		return nil, fmt.Errorf("gemini: encode result: result is for call %q, not %q", r.CallID, c.ID)
	}
	p := pending{id: c.ID, wireID: c.ID, name: c.Name, safety: c.SafetyChecks, client: c.Input != nil}
	var part genai.Part
	if len(c.Raw) > 0 && json.Unmarshal(c.Raw, &part) == nil && part.FunctionCall != nil {
		// The functionCall's own id, which may be empty, and name.
		p.wireID, p.name = part.FunctionCall.ID, part.FunctionCall.Name
	}
	if p.name == "" {
		return nil, fmt.Errorf("gemini: encode result for %s: the call has no function name", c.ID)
	}
	b, err := json.Marshal(&genai.Part{FunctionResponse: functionResponse(p, r)})
	if err != nil {
		return nil, fmt.Errorf("gemini: encode result for %s: %w", c.ID, err)
	}
	return b, nil
}
