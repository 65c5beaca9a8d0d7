package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spotter-harness/spotter/actions"
	oaiaction "github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/screen"
)

// ComputerFunction is the name of the one function the Functions dialect
// declares.
const ComputerFunction = "computer"

// actionTypes are the values of the computer function's "type": OpenAI's
// computer actions, then Spotter's extensions (see openai.DecodeAction).
var actionTypes = []string{
	"click", "double_click", "drag", "keypress", "move", "scroll", "type", "wait", "screenshot",
	"triple_click", "mouse_down", "mouse_up", "hold_key", "zoom", "navigate", "go_back", "go_forward", "cursor_position",
}

// computerSchema is the JSON schema of the computer function's arguments:
// one OpenAI-style action object, or a batch of them in "actions".
func computerSchema() map[string]any {
	num := func(desc string) map[string]any { return map[string]any{"type": "number", "description": desc} }
	point := map[string]any{
		"type":       "object",
		"properties": map[string]any{"x": map[string]any{"type": "number"}, "y": map[string]any{"type": "number"}},
		"required":   []string{"x", "y"},
	}
	action := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"type":        map[string]any{"type": "string", "enum": actionTypes, "description": "The action to perform."},
			"x":           num("Horizontal position of the pointer action."),
			"y":           num("Vertical position of the pointer action."),
			"button":      map[string]any{"type": "string", "enum": []string{"left", "right", "wheel", "back", "forward"}, "description": "Mouse button of click, triple_click, mouse_down and mouse_up; default left."},
			"keys":        map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": `keypress and hold_key: the keys pressed together, e.g. ["CTRL", "C"]. Pointer actions: modifier keys held during the action, e.g. ["SHIFT"].`},
			"text":        map[string]any{"type": "string", "description": "type: the text to type."},
			"path":        map[string]any{"type": "array", "items": point, "description": "drag: the points to drag through, from the first to the last (at least 2)."},
			"scroll_x":    num("scroll: distance to scroll right (negative: left), in the same units as x."),
			"scroll_y":    num("scroll: distance to scroll down (negative: up), in the same units as y."),
			"duration_ms": num("hold_key: how long to hold the keys; wait: how long to wait (default 1000)."),
			"url":         map[string]any{"type": "string", "description": "navigate: an absolute URL to load."},
			"x1":          num("zoom: left edge of the region to look at closely."),
			"y1":          num("zoom: top edge of the region."),
			"x2":          num("zoom: right edge of the region."),
			"y2":          num("zoom: bottom edge of the region."),
		},
		"required": []string{"type"},
	}
	props := map[string]any{}
	for k, v := range action["properties"].(map[string]any) {
		props[k] = v
	}
	props["actions"] = map[string]any{"type": "array", "items": map[string]any{"type": "object"},
		"description": "Instead of one action: a batch to perform in order, each an object with the fields above, e.g. " +
			`[{"type":"type","text":"kittens"},{"type":"keypress","keys":["ENTER"]}]. The screenshot comes after the last.`}
	return map[string]any{"type": "object", "properties": props}
}

// computerDescription describes the computer function to the model.
func computerDescription(s screen.Space, display screen.Size) string {
	return "Perform one action on the computer (or a batch, in actions), then receive a new screenshot. " + coordinateHelp(s, display)
}

// DecodeArguments decodes the arguments of a call to the computer
// function. They arrive as a JSON string holding an object, and parsing
// that string is the first check: an action object in OpenAI's style,
// {"type":"click","x":10,"y":20}, read by openai.DecodeAction (so Spotter's
// extension types work too), or {"actions":[...]}, a batch. When "type" is
// missing, an "action" field is read in its place, as a type name or as
// the whole action object, since some models write it so. Coordinates are as the model wrote them. Every error wraps
// actions.ErrInvalid and says what was wrong, for the model to read.
func DecodeArguments(args string) ([]actions.Action, error) {
	raw := bytes.TrimSpace([]byte(args))
	if len(raw) == 0 {
		return nil, invalidf("computer: no arguments (want a JSON object such as {\"type\":\"click\",\"x\":10,\"y\":20})")
	}
	if raw[0] != '{' {
		return nil, invalidf("computer: arguments must be a JSON object, got %s", quoteClip(string(raw)))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, invalidf("computer: arguments are not valid JSON: %v", err)
	}
	if batch, ok := obj["actions"]; ok && !isNull(batch) {
		if _, hasType := obj["type"]; hasType {
			return nil, invalidf(`computer: give either "type" (one action) or "actions" (a batch), not both`)
		}
		as, err := oaiaction.DecodeActions(batch)
		if err != nil {
			return nil, invalidf("computer: %s", reason(err))
		}
		return as, nil
	}
	if t, ok := obj["type"]; !ok || isNull(t) {
		if a := bytes.TrimSpace(obj["action"]); len(a) > 0 {
			switch a[0] {
			case '{': // {"action": {"type": ...}}
				return decodeOne(a)
			case '"': // {"action": "click", ...}
				obj["type"] = a
				delete(obj, "action")
				b, err := json.Marshal(obj)
				if err != nil {
					return nil, invalidf("computer: %v", err)
				}
				return decodeOne(b)
			}
		}
	}
	return decodeOne(raw)
}

func decodeOne(raw []byte) ([]actions.Action, error) {
	a, err := oaiaction.DecodeAction(raw)
	if err != nil {
		return nil, invalidf("computer: %s", reason(err))
	}
	return []actions.Action{a}, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// argumentsText returns the arguments of a tool call as a string. The
// wire form is a JSON string; a server that sends an object instead is
// accepted too (its compact JSON is used).
func argumentsText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("arguments: %v", err)
		}
		return s, nil
	case raw[0] == '{':
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return "", fmt.Errorf("arguments: %v", err)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("arguments must be a JSON string, got %s", quoteClip(strings.TrimSpace(string(raw))))
}
