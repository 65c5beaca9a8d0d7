// Package browsertool declares Spotter's browser actions, which no
// provider's computer tool has: list, switch and close tabs, answer a
// JavaScript dialog, and answer a file chooser. The adapters offer them to
// a model as ordinary functions (one per action), or as one tool with an
// action enum (Tool), and decode the model's arguments into canonical
// actions (actions.ListTabs, SwitchTab, CloseTab, Dialog and Upload).
package browsertool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spotter-harness/spotter/actions"
)

// ToolName is the name of the single tool that carries every action.
const ToolName = "browser"

// Function is one action declared as a function: its name (the canonical
// kind's name), what it does, and the JSON schema of its arguments.
type Function struct {
	Name        string
	Description string
	Parameters  map[string]any
}

// Names are the functions' names, in the order Functions declares them.
var Names = []string{"list_tabs", "switch_tab", "close_tab", "dialog", "upload"}

var (
	tabSchema    = map[string]any{"type": "integer", "minimum": 0, "description": "The tab's number, 0-based, as list_tabs numbers the tabs."}
	acceptSchema = map[string]any{"type": "boolean", "description": "true presses OK (accept), false presses Cancel (dismiss)."}
	textSchema   = map[string]any{"type": "string", "description": "For a prompt() dialog: the text to answer with."}
	filesSchema  = map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1,
		"description": "The files to choose, by the names the session makes available."}
)

func object(props map[string]any, required ...string) map[string]any {
	if required == nil {
		required = []string{}
	}
	return map[string]any{"type": "object", "properties": props, "required": required}
}

// Functions returns the actions as functions, one each. The maps are new
// on each call, so a caller may change them.
func Functions() []Function {
	return []Function{
		{"list_tabs", "List the open browser tabs, with their numbers, titles and URLs.", object(map[string]any{})},
		{"switch_tab", "Make another tab the active one; the next screenshot shows it.",
			object(map[string]any{"tab": tabSchema}, "tab")},
		{"close_tab", "Close a tab. The browser always keeps one page open.",
			object(map[string]any{"tab": tabSchema}, "tab")},
		{"dialog", "Answer the JavaScript dialog (alert, confirm, prompt or leave-page) that the page opened.",
			object(map[string]any{"accept": acceptSchema, "text": textSchema}, "accept")},
		{"upload", "Answer the open file chooser with files the session makes available.",
			object(map[string]any{"files": filesSchema}, "files")},
	}
}

// Tool returns the description and input schema of the single tool that
// carries every action: {"action": one of Names, plus that action's
// arguments}.
func Tool() (description string, schema map[string]any) {
	return "Browser actions the computer tool lacks: list_tabs lists the open tabs; switch_tab and close_tab " +
			"take a tab number; dialog answers the page's JavaScript dialog (accept, and text for a prompt); " +
			"upload answers the open file chooser with files the session makes available.",
		object(map[string]any{
			"action": map[string]any{"type": "string", "enum": slices.Clone(Names)},
			"tab":    tabSchema, "accept": acceptSchema, "text": textSchema, "files": filesSchema,
		}, "action")
}

// Decode decodes the arguments of function name, a JSON object. Empty
// arguments and JSON null mean none ({}): a provider may leave the
// arguments of a call without any out (Gemini's list_tabs), and a decoder
// of generic JSON then passes null. Errors wrap actions.ErrInvalid and
// name the field.
func Decode(name string, args json.RawMessage) (actions.Action, error) {
	var obj map[string]json.RawMessage
	if args := bytes.TrimSpace(args); len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
			return actions.Action{}, fmt.Errorf("%w: %s: the arguments are not a JSON object", actions.ErrInvalid, clip(name))
		}
	}
	a, err := decode(name, obj)
	if err != nil {
		return actions.Action{}, fmt.Errorf("%w: %s: %v", actions.ErrInvalid, clip(name), err)
	}
	return a, nil
}

// DecodeTool decodes the input of the single tool: {"action": name, ...}.
func DecodeTool(input json.RawMessage) (actions.Action, error) {
	var v struct {
		Action json.RawMessage `json:"action"`
	}
	if err := json.Unmarshal(input, &v); err != nil {
		return actions.Action{}, fmt.Errorf("%w: %s: the input is not a JSON object", actions.ErrInvalid, ToolName)
	}
	var name string
	if json.Unmarshal(v.Action, &name) != nil || name == "" {
		return actions.Action{}, fmt.Errorf(`%w: %s: missing "action" (want one of %s)`, actions.ErrInvalid, ToolName, strings.Join(Names, ", "))
	}
	return Decode(name, input)
}

func decode(name string, obj map[string]json.RawMessage) (actions.Action, error) {
	var a actions.Action
	switch name {
	case "list_tabs":
		a.Kind = actions.ListTabs
	case "switch_tab", "close_tab":
		a.Kind = actions.SwitchTab
		if name == "close_tab" {
			a.Kind = actions.CloseTab
		}
		v, ok := present(obj, "tab")
		if !ok {
			return a, fmt.Errorf(`missing "tab"`)
		}
		var f float64
		if json.Unmarshal(v, &f) != nil || f != float64(int(f)) || f < 0 || f > 1e6 {
			return a, fmt.Errorf(`"tab" must be a tab number (0, 1, ...), got %s`, clip(string(v)))
		}
		a.Tab = int(f)
	case "dialog":
		a.Kind = actions.Dialog
		v, ok := present(obj, "accept")
		if !ok {
			return a, fmt.Errorf(`missing "accept"`)
		}
		if json.Unmarshal(v, &a.Accept) != nil {
			return a, fmt.Errorf(`"accept" must be true or false, got %s`, clip(string(v)))
		}
		if v, ok := present(obj, "text"); ok && json.Unmarshal(v, &a.Text) != nil {
			return a, fmt.Errorf(`"text" must be a string, got %s`, clip(string(v)))
		}
	case "upload":
		a.Kind = actions.Upload
		v, ok := present(obj, "files")
		if !ok {
			return a, fmt.Errorf(`missing "files"`)
		}
		if json.Unmarshal(v, &a.Files) != nil || len(a.Files) == 0 {
			return a, fmt.Errorf(`"files" must be a list of one or more file names, got %s`, clip(string(v)))
		}
	default:
		return a, fmt.Errorf("unknown browser action (want one of %s)", strings.Join(Names, ", "))
	}
	return a, nil
}

// present returns a field that is there and not null.
func present(obj map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	v, ok := obj[name]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil, false
	}
	return v, true
}

// clip shortens s for an error message, and quotes it unless it is one
// of Names.
func clip(s string) string {
	const n = 40
	if slices.Contains(Names, s) {
		return s
	}
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...", s[:n])
}
