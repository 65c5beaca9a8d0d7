package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/internal/imagejson"
	"github.com/spotter-harness/spotter/screen"
)

// ExecutorVersion is the computer tool version DecodeCall reads: the newest,
// whose actions include those of the older versions. A click without a
// coordinate acts at the pointer, as in computer_20241022.
const ExecutorVersion = Computer20251124

// DecodeCall decodes one tool_use block that a client's own agent loop
// received from Claude, such as
//
//	{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}
//
// into a Call in the pixels of the screenshots the client sends
// (screen.Image). It reads the tools a Model declares to Claude: the
// computer tool, whose actions are those of ExecutorVersion, and the
// browser tool of Config.Browser (BrowserToolName: tabs, JavaScript
// dialogs and file choosers), decoded as a Model decodes them. display is
// the screenshot size; when it is not empty, a point outside it is an
// error. A left_click_drag needs its start_coordinate, since DecodeCall does
// not know where the pointer is.
//
// A malformed block is an error wrapping actions.ErrInvalid or
// ErrUnknownTool, and the Call returned with it carries the error in
// DecodeErr and as much as was read (ID, Name, Raw), so that the caller can
// still answer the model with EncodeResult: another tool's name, an input
// that does not decode, a field of the wrong type. The Call has an ID only
// when the block has a usable one (a non-empty string): a block without it
// cannot be answered.
func DecodeCall(raw json.RawMessage, display screen.Size) (harness.Call, error) {
	call := harness.Call{Space: screen.Image, Raw: bytes.Clone(raw)}
	fail := func(err error) (harness.Call, error) {
		call.DecodeErr, call.Actions = err, nil
		return call, err
	}
	var b struct {
		Type  json.RawMessage `json:"type"`
		ID    json.RawMessage `json:"id"`
		Name  json.RawMessage `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return fail(fmt.Errorf("%w: a tool_use block must be a JSON object, got %s", actions.ErrInvalid, jsonKind(raw)))
	}
	typ, err := field(b.Type, "type")
	if err != nil {
		return fail(err)
	}
	if typ != "tool_use" {
		return fail(fmt.Errorf(`%w: block type %q, want "tool_use"`, actions.ErrInvalid, clip(typ)))
	}
	id, err := field(b.ID, "id")
	if err != nil {
		return fail(err)
	}
	if id == "" {
		return fail(fmt.Errorf(`%w: the tool_use block has no "id"`, actions.ErrInvalid))
	}
	call.ID = id
	if call.Name, err = field(b.Name, "name"); err != nil {
		return fail(err)
	}
	if call.Name != ToolName && call.Name != BrowserToolName {
		return fail(fmt.Errorf("%w %q: the executor runs the %q and %q tools", ErrUnknownTool, clip(call.Name), ToolName, BrowserToolName))
	}
	block := anthropic.BetaContentBlockUnion{Type: typ, ID: id, Name: call.Name, Input: b.Input}
	call = decodeToolUse(block, Decoder{Version: ExecutorVersion}, nil, true, false)
	call.Raw = bytes.Clone(raw)
	if call.DecodeErr != nil {
		return fail(call.DecodeErr)
	}
	if err := within(call.Actions, display); err != nil {
		return fail(err)
	}
	return call, nil
}

// field reads a string field of a tool_use block: "" when it is absent or
// null, an error naming the field when it is not a string.
func field(raw json.RawMessage, name string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%w: the tool_use block's %q must be a string, got %s", actions.ErrInvalid, name, jsonKind(raw))
	}
	return s, nil
}

// jsonKind names the JSON type of raw for an error message, without
// quoting it.
func jsonKind(raw json.RawMessage) string {
	s := bytes.TrimSpace(raw)
	if len(s) == 0 || !json.Valid(s) {
		return "text that is not JSON"
	}
	switch s[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// EncodeResult answers c with r as a tool_result block paired to c.ID, the
// block the client appends to its next user message: r's text (the error
// with is_error, notes, the pointer position) and its fresh screenshot (or
// zoom image) as a base64 image. A call of an application-side tool (one
// with Input) is answered with r.Output as text.
func EncodeResult(c harness.Call, r harness.Result) (json.RawMessage, error) {
	if c.ID == "" {
		return nil, errors.New("anthropic: encode result: the call has no id")
	}
	if r.CallID != "" && r.CallID != c.ID {
		return nil, fmt.Errorf("anthropic: encode result: result is for call %q, not %q", r.CallID, c.ID)
	}
	out, err := imagejson.Marshal(r, func(r harness.Result) ([]byte, error) {
		b, err := toolResult(pendingCall{id: c.ID, n: len(c.Actions), client: c.Input != nil}, r, screen.Size{})
		if err != nil {
			return nil, err
		}
		return json.Marshal(b)
	})
	if err != nil {
		return nil, fmt.Errorf("anthropic: encode result for %s: %w", c.ID, err)
	}
	return out, nil
}

// within checks that the points of as lie on an image of size s; an empty
// s allows any point.
func within(as []actions.Action, s screen.Size) error {
	if s.Empty() {
		return nil
	}
	check := func(p actions.Point) error {
		if p.X < 0 || p.Y < 0 || p.X > float64(s.W) || p.Y > float64(s.H) {
			return fmt.Errorf("%w: point (%g, %g) is outside the %dx%d display", actions.ErrInvalid, p.X, p.Y, s.W, s.H)
		}
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
			if err := check(p); err != nil {
				return fmt.Errorf("%s: %w", a.Kind, err)
			}
		}
	}
	return nil
}
