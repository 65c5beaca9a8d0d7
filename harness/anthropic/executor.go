package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

// ExecutorVersion is the computer tool version DecodeCall reads: the newest,
// whose actions include those of the older versions. A click without a
// coordinate acts at the pointer, as in computer_20241022.
const ExecutorVersion = Computer20251124

// DecodeCall decodes one computer tool_use block that a client's own agent
// loop received from Claude, such as
//
//	{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}
//
// into a Call in the pixels of the screenshots the client sends
// (screen.Image). display is that screenshot size; when it is not empty, a
// point outside it is an error. The actions are those of ExecutorVersion;
// a left_click_drag needs its start_coordinate, since DecodeCall does not
// know where the pointer is.
//
// A malformed block (not JSON, not a tool_use, no id, another tool's name,
// an action that does not decode) is an error wrapping actions.ErrInvalid
// or ErrUnknownTool, and the Call returned with it carries the error in
// DecodeErr and as much as was read (ID, Name, Raw), so that the caller can
// still answer the model with EncodeResult.
func DecodeCall(raw json.RawMessage, display screen.Size) (harness.Call, error) {
	call := harness.Call{Space: screen.Image, Raw: bytes.Clone(raw)}
	fail := func(err error) (harness.Call, error) {
		call.DecodeErr = err
		return call, err
	}
	var b struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return fail(fmt.Errorf("%w: a tool_use block must be a JSON object: %v", actions.ErrInvalid, err))
	}
	call.ID, call.Name = b.ID, b.Name
	switch {
	case b.Type != "tool_use":
		return fail(fmt.Errorf(`%w: block type %q, want "tool_use"`, actions.ErrInvalid, clip(b.Type)))
	case b.ID == "":
		return fail(fmt.Errorf(`%w: the tool_use block has no "id"`, actions.ErrInvalid))
	case b.Name != ToolName:
		return fail(fmt.Errorf("%w %q: the executor runs only the %q tool", ErrUnknownTool, clip(b.Name), ToolName))
	}
	var c anthropic.BetaContentBlockUnion
	if err := json.Unmarshal(raw, &c); err != nil {
		return fail(fmt.Errorf("%w: tool_use block: %v", actions.ErrInvalid, err))
	}
	call = decodeToolUse(c, Decoder{Version: ExecutorVersion}, nil, false, false)
	call.Raw = bytes.Clone(raw)
	if call.DecodeErr != nil {
		return call, call.DecodeErr
	}
	if err := within(call.Actions, display); err != nil {
		return fail(err)
	}
	return call, nil
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
	b, err := toolResult(pendingCall{id: c.ID, n: len(c.Actions), client: c.Input != nil}, r, screen.Size{})
	if err != nil {
		return nil, fmt.Errorf("anthropic: encode result for %s: %w", c.ID, err)
	}
	out, err := json.Marshal(b)
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
