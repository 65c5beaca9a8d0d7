package gemini

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"google.golang.org/genai"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/internal/imagejson"
	"github.com/spotter-harness/spotter/screen"
)

// DecodePart decodes one part holding a functionCall that a client's own
// agent loop received from Gemini, such as
//
//	{"functionCall":{"id":"fc_1","name":"click_at","args":{"x":500,"y":300}}}
//
// into a Call in screen.Grid1000 coordinates, with a safety_decision that
// needs a human as SafetyChecks. It reads the functions a Model declares
// to Gemini with Config.Browser, decoded as that Model decodes them: the
// predefined functions of set (FunctionsAuto picks the set by the
// function's name; the names both sets share decode alike), except
// key_down and key_up, and the browser functions list_tabs, switch_tab,
// close_tab, dialog and upload (tabs, JavaScript dialogs and file
// choosers).
//
// Gemini may leave a call's id out. Such a call gets a fresh Call.ID,
// "gemini-call-" and random letters, so that two of them are never taken
// for one; EncodeResult answers it by name and without an id, as Gemini
// pairs calls that have none.
//
// A malformed part is an error wrapping actions.ErrInvalid, and the Call
// returned with it carries the error in DecodeErr and as much as was read
// (ID, Name, Raw), so that the caller can still answer the model with
// EncodeResult: an unknown function, args that are not an object (a JSON
// string, say), arguments of the wrong type. The Call has an ID only when
// EncodeResult can answer it: a part that is not a JSON object, has no
// functionCall, an id that is not a string or no function name has none.
func DecodePart(raw json.RawMessage, set FunctionSet) (harness.Call, error) {
	raw = bytes.Clone(raw)
	call := harness.Call{Space: screen.Grid1000, Raw: raw}
	fail := func(err error) (harness.Call, error) {
		call.DecodeErr, call.Actions = err, nil
		return call, err
	}
	fc, err := wireCall(raw)
	if err != nil {
		return fail(err)
	}
	call.ID, call.Name = fc.id, fc.name
	if call.ID == "" {
		call.ID = "gemini-call-" + rand.Text()
	}
	if args := bytes.TrimSpace(fc.args); len(args) > 0 && string(args) != "null" && args[0] != '{' {
		return fail(fmt.Errorf("%w: %s: args must be a JSON object of the function's arguments, got %s",
			actions.ErrInvalid, fc.name, jsonKind(args)))
	}
	var p genai.Part
	if err := json.Unmarshal(raw, &p); err != nil || p.FunctionCall == nil {
		return fail(fmt.Errorf("%w: %s: the part does not decode: %s", actions.ErrInvalid, fc.name, partProblem(err)))
	}
	if set == FunctionsAuto {
		set = setOf(fc.name)
	}
	d, err := executorDecoder(set)
	if err != nil {
		return fail(fmt.Errorf("%w: %s: %v", actions.ErrInvalid, fc.name, err))
	}
	p.FunctionCall.ID = call.ID // the fresh id too, for the safety checks
	decoded, _ := decodePart(&p, 0, d)
	decoded.Raw = raw
	call = decoded
	if call.DecodeErr != nil {
		return fail(call.DecodeErr)
	}
	return call, nil
}

// executorDecoders are the decoders of Models that declare each function
// set with the browser functions: what DecodePart accepts is what a Model
// declares, decoded by the same code. Models are built once, with no I/O;
// their API key is never sent.
var executorDecoders = map[FunctionSet]func() (decoder, error){
	FunctionsLegacy: sync.OnceValues(func() (decoder, error) { return modelDecoder(FunctionsLegacy) }),
	Functions35:     sync.OnceValues(func() (decoder, error) { return modelDecoder(Functions35) }),
}

func executorDecoder(set FunctionSet) (decoder, error) {
	f, ok := executorDecoders[set]
	if !ok {
		return decoder{}, fmt.Errorf("unknown function set %v", set)
	}
	return f()
}

func modelDecoder(set FunctionSet) (decoder, error) {
	m, err := New(Config{APIKey: "executor", Functions: set, Browser: true})
	if err != nil {
		return decoder{}, err
	}
	return m.decoder(), nil
}

// wireFunctionCall is the functionCall of a part as it came: its id (""
// when there is none), name and args, undecoded.
type wireFunctionCall struct {
	id, name string
	args     json.RawMessage
}

// wireCall reads the functionCall of a part without decoding its
// arguments, so that a call with malformed args still has its id and
// name. It fails when the part cannot be answered: not a JSON object, no
// functionCall, an id or name that is not a string, or no name.
func wireCall(raw json.RawMessage) (wireFunctionCall, error) {
	var p struct {
		FunctionCall json.RawMessage `json:"functionCall"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return wireFunctionCall{}, fmt.Errorf("%w: a part must be a JSON object, got %s", actions.ErrInvalid, jsonKind(raw))
	}
	if fc := bytes.TrimSpace(p.FunctionCall); len(fc) == 0 || string(fc) == "null" {
		return wireFunctionCall{}, fmt.Errorf(`%w: the part has no "functionCall"`, actions.ErrInvalid)
	}
	var fc struct {
		ID   json.RawMessage `json:"id"`
		Name json.RawMessage `json:"name"`
		Args json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal(p.FunctionCall, &fc); err != nil {
		return wireFunctionCall{}, fmt.Errorf("%w: the functionCall must be a JSON object, got %s", actions.ErrInvalid, jsonKind(p.FunctionCall))
	}
	w := wireFunctionCall{args: fc.Args}
	var err error
	if w.id, err = wireString(fc.ID, "id"); err != nil {
		return wireFunctionCall{}, err
	}
	if w.name, err = wireString(fc.Name, "name"); err != nil {
		return wireFunctionCall{}, err
	}
	if w.name == "" {
		return wireFunctionCall{}, fmt.Errorf("%w: the functionCall has no name", actions.ErrInvalid)
	}
	return w, nil
}

// wireString reads a string field of a functionCall: "" when it is absent
// or null.
func wireString(raw json.RawMessage, name string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%w: the functionCall's %s must be a string, got %s", actions.ErrInvalid, name, jsonKind(raw))
	}
	return s, nil
}

// jsonKind names the JSON type of raw for an error message.
func jsonKind(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "text that is not JSON"
	}
	return typeName(v)
}

// partProblem says in JSON's words, not Go's, why a part did not decode.
func partProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%s is a JSON %s, want %s", te.Field, te.Value, jsonTypeOf(te.Type))
	}
	return "it is not a Gemini part"
}

// jsonTypeOf names the JSON type that decodes into t.
func jsonTypeOf(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonTypeOf(t.Elem())
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another type"
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
	if fc, err := wireCall(c.Raw); len(c.Raw) > 0 && err == nil {
		// The functionCall's own id, which may be empty, and name, even
		// when its args did not decode.
		p.wireID, p.name = fc.id, fc.name
	}
	if p.name == "" {
		return nil, fmt.Errorf("gemini: encode result for %s: the call has no function name", c.ID)
	}
	b, err := imagejson.Marshal(r, func(r harness.Result) ([]byte, error) {
		return json.Marshal(&genai.Part{FunctionResponse: functionResponse(p, r)})
	})
	if err != nil {
		return nil, fmt.Errorf("gemini: encode result for %s: %w", c.ID, err)
	}
	return b, nil
}
