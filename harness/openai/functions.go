package openai

import "github.com/spotter-harness/spotter/harness/internal/browsertool"

// A function tool for one Spotter extension action: its description and
// the JSON schema of its arguments, which are the fields DecodeAction reads
// for the type of the same name.
type function struct {
	description string
	parameters  map[string]any
}

func schemaObject(props map[string]any, required ...string) map[string]any {
	if required == nil {
		required = []string{}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

var (
	numberSchema = map[string]any{"type": "number"}
	keysSchema   = map[string]any{"type": "array", "items": map[string]any{"type": "string"},
		"description": `Keys pressed together, e.g. ["SHIFT"] or ["CTRL", "A"].`}
	buttonSchema = map[string]any{"type": "string", "enum": []string{"left", "right", "wheel", "back", "forward"}}
)

// functionSchemas are the extension functions Config.Functions may name:
// the extension actions, and the browser actions (tabs, dialogs, file
// choosers) whose arguments DecodeAction reads the same way.
var functionSchemas = withBrowser(map[string]function{
	"navigate": {"Load a URL in the current tab.",
		schemaObject(map[string]any{"url": map[string]any{"type": "string", "description": "An absolute URL."}}, "url")},
	"go_back":         {"Go back one page in the tab's history.", schemaObject(map[string]any{})},
	"go_forward":      {"Go forward one page in the tab's history.", schemaObject(map[string]any{})},
	"cursor_position": {"Report where the mouse pointer is, in screenshot pixels.", schemaObject(map[string]any{})},
	"triple_click": {"Click three times at (x, y), e.g. to select a paragraph.",
		schemaObject(map[string]any{"x": numberSchema, "y": numberSchema, "button": buttonSchema, "keys": keysSchema}, "x", "y")},
	"mouse_down": {"Press a mouse button at (x, y), or at the pointer if x and y are omitted, and keep it pressed.",
		schemaObject(map[string]any{"x": numberSchema, "y": numberSchema, "button": buttonSchema, "keys": keysSchema})},
	"mouse_up": {"Release a mouse button at (x, y), or at the pointer if x and y are omitted.",
		schemaObject(map[string]any{"x": numberSchema, "y": numberSchema, "button": buttonSchema, "keys": keysSchema})},
	"hold_key": {"Hold keys down for duration_ms milliseconds.",
		schemaObject(map[string]any{"keys": keysSchema, "duration_ms": numberSchema}, "keys", "duration_ms")},
	"zoom": {"Look at the region from (x1, y1) to (x2, y2) of the screenshot at full resolution. Later coordinates still refer to the full screenshot.",
		schemaObject(map[string]any{"x1": numberSchema, "y1": numberSchema, "x2": numberSchema, "y2": numberSchema}, "x1", "y1", "x2", "y2")},
})

// withBrowser adds the browser actions to m.
func withBrowser(m map[string]function) map[string]function {
	for _, f := range browsertool.Functions() {
		f.Parameters["additionalProperties"] = false
		m[f.Name] = function{f.Description, f.Parameters}
	}
	return m
}
