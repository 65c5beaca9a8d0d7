package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spotter-harness/spotter/actions"
)

// The tools' input schemas are plain JSON Schema: every object says
// "type": "object" and lists its properties, with no allOf, anyOf, oneOf
// or $ref that would hide a type from a client that builds arguments from
// the schema (the MCP Inspector's --tool-arg, forms in a client's UI).
// The same schemas check every call's arguments (checkSchema) before
// anything is decoded, so that a wrong argument is answered in the
// schema's words, never in Go's.

// schema is one JSON Schema node.
type schema = map[string]any

func obj(props schema, required ...string) schema {
	m := schema{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		m["required"] = required
	}
	return m
}

func str(desc string) schema { return schema{"type": "string", "description": desc} }
func num(desc string) schema { return schema{"type": "number", "description": desc} }

// pointSchema is a point of the screenshot, or an element of the
// snapshot by its reference.
func pointSchema(desc string) schema {
	s := obj(schema{
		"x":   num("image pixels from the screenshot's left edge"),
		"y":   num("image pixels from the screenshot's top edge"),
		"ref": str(`an element's reference from the snapshot tool ("e12"), instead of x and y: the element's visible centre`),
	})
	s["description"] = desc + `: {"x": 85, "y": 254} in pixels of the screenshot, or {"ref": "e12"} from the snapshot tool`
	return s
}

var sessionProp = str("session id from open_session; default: this connection's own session")

// actionProps are the fields of actions.Action's JSON, in image pixels of
// the screenshot the client saw.
func actionProps() schema {
	strs := func(desc string) schema {
		return schema{"type": "array", "items": schema{"type": "string"}, "description": desc}
	}
	return schema{
		"kind":      schema{"type": "string", "enum": kindNames(), "description": "what to do"},
		"at":        pointSchema("where to act (clicks, move, scroll, mouse_down, mouse_up)"),
		"path":      schema{"type": "array", "items": pointSchema("a point of the drag"), "description": "drag: two or more points, from the first to the last"},
		"button":    schema{"type": "string", "enum": []string{"left", "right", "middle", "back", "forward"}, "description": "the mouse button (default left)"},
		"modifiers": strs(`modifier keys held during a pointer action, e.g. ["shift"]`),
		"dx":        num("scroll: pixels right (negative: left)"),
		"dy":        num("scroll: pixels down (negative: up)"),
		"text":      str("type: the text; dialog: the answer to a prompt"),
		"keys":      strs(`keypress, hold_key: one chord, e.g. ["ctrl", "shift", "k"]`),
		"duration_ms": schema{"type": "number", "minimum": 0,
			"description": "wait, hold_key: milliseconds"},
		"region": func() schema {
			r := obj(schema{"min": pointSchema("the top left corner"), "max": pointSchema("the bottom right corner")}, "min", "max")
			r["description"] = `zoom: the region to see at full resolution, {"min": {"x", "y"}, "max": {"x", "y"}} in image pixels`
			return r
		}(),
		"url":    str("navigate: the URL"),
		"tab":    schema{"type": "integer", "minimum": 0, "description": "switch_tab, close_tab: the tab's number, as list_tabs gives it"},
		"accept": schema{"type": "boolean", "description": "dialog: accept (OK) rather than dismiss (Cancel)"},
		"files":  strs("upload: the files, as the policy names them"),
	}
}

func computerSchema() schema {
	props := actionProps()
	props["session"] = sessionProp
	props["frame_id"] = str("the screenshot the coordinates refer to (default: the latest)")
	item := obj(actionProps(), "kind")
	item["description"] = "one action: kind and its fields"
	props["actions"] = schema{"type": "array", "items": item,
		"description": "a batch of actions instead of one; run in order, stopping at the first failure"}
	return obj(props)
}

// toolSchemas are the input schemas of every tool, by name.
func toolSchemas() map[string]schema {
	return map[string]schema{
		ToolComputer:     computerSchema(),
		ToolNavigate:     obj(schema{"url": str("the URL to open"), "session": sessionProp}, "url"),
		ToolOpenSession:  obj(schema{"start_url": str("the page to open (default: the server's start page)")}),
		ToolCloseSession: obj(schema{"session": str("the session to close")}, "session"),
		ToolListSessions: obj(schema{}),
		ToolSnapshot:     obj(schema{"session": sessionProp}),
	}
}

// checkSchema checks the JSON value raw against s and says what is wrong
// in the schema's words. name is the argument's name ("" for the whole
// arguments object).
func checkSchema(raw json.RawMessage, s schema) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("%w: the arguments are not JSON: %v", actions.ErrInvalid, err)
	}
	if err := check(v, s, ""); err != nil {
		return fmt.Errorf("%w: %s", actions.ErrInvalid, err)
	}
	return nil
}

// typeOf names a JSON value's type as JSON Schema does.
func typeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// a is a type's name with its article: "an object".
func a(typ string) string {
	if typ != "" && strings.IndexByte("aeiou", typ[0]) >= 0 {
		return "an " + typ
	}
	return "a " + typ
}

// shown is a short form of v for an error message.
func shown(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 40 {
		return string(b[:37]) + "..."
	}
	return string(b)
}

func check(v any, s schema, path string) error {
	name := "the arguments"
	if path != "" {
		name = fmt.Sprintf("%q", path)
	}
	want, _ := s["type"].(string)
	got := typeOf(v)
	ok := got == want || want == "number" && got == "integer" || want == ""
	if !ok {
		if want == "integer" && got == "number" {
			return fmt.Errorf("%s must be a whole number, not %s", name, shown(v))
		}
		msg := fmt.Sprintf("%s must be %s, not %s %s", name, a(want), a(got), shown(v))
		if d, _ := s["description"].(string); d != "" {
			msg += " (" + d + ")"
		}
		if str, isStr := v.(string); isStr && (want == "object" || want == "array") && json.Valid([]byte(str)) {
			msg += "; send it as JSON, not as a string holding JSON"
		}
		return fmt.Errorf("%s", msg)
	}
	switch want {
	case "object":
		m := v.(map[string]any)
		props, _ := s["properties"].(schema)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps, known := props[k].(schema)
			if !known {
				return unknownArgument(path, k, props)
			}
			if err := check(m[k], ps, join(path, k)); err != nil {
				return err
			}
		}
		if req, _ := s["required"].([]string); len(req) > 0 {
			for _, k := range req {
				if _, ok := m[k]; !ok {
					return fmt.Errorf("%s is required", quoteJoin(path, k))
				}
			}
		}
	case "array":
		items, _ := s["items"].(schema)
		for i, e := range v.([]any) {
			if err := check(e, items, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case "string":
		if enum, _ := s["enum"].([]string); len(enum) > 0 && !slices.Contains(enum, v.(string)) {
			return fmt.Errorf("%s is %q; want one of %s", name, v, strings.Join(enum, ", "))
		}
	case "integer", "number":
		if lo, ok := s["minimum"].(int); ok {
			if f, _ := v.(json.Number).Float64(); f < float64(lo) {
				return fmt.Errorf("%s must be at least %d, not %s", name, lo, v)
			}
		}
	}
	return nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func quoteJoin(path, k string) string { return fmt.Sprintf("%q", join(path, k)) }

// unknownArgument refuses a name the schema does not have: a client that
// writes {"kind":"click","x":85,"y":254} must learn the right shape, not
// have its click land at the pointer's old position.
func unknownArgument(path, k string, props schema) error {
	hint := ""
	if (k == "x" || k == "y") && props["at"] != nil {
		hint = `; a point is "at": {"x": 85, "y": 254}`
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	where := "here"
	if path != "" {
		where = fmt.Sprintf("in %q", path)
	}
	msg := fmt.Sprintf("unknown argument %q%s (%s the arguments are %s)", join(path, k), hint, where, strings.Join(names, ", "))
	if props["kind"] != nil {
		msg += `. An action is {"kind": ..., "at": {"x", "y"} or {"ref"}, "text", "keys", "url", ...}, for example {"kind": "click", "at": {"x": 85, "y": 254}}`
	}
	return fmt.Errorf("%s", msg)
}
