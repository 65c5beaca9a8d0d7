package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

// plain checks that a schema node and everything under it is plain JSON
// Schema: a type at every level, "object" wherever there are properties,
// and none of the combinators that hide a type from generic clients.
func plain(t *testing.T, where string, v any) {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Errorf("%s: %T, want a schema object", where, v)
		return
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "not", "$ref"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s has %s", where, k)
		}
	}
	typ, _ := m["type"].(string)
	if typ == "" {
		t.Errorf("%s has no type", where)
	}
	if props, ok := m["properties"].(map[string]any); ok {
		if typ != "object" {
			t.Errorf("%s has properties but type %q", where, typ)
		}
		for k, p := range props {
			plain(t, where+"."+k, p)
		}
	}
	if typ == "object" {
		if _, ok := m["properties"]; !ok {
			t.Errorf("%s is an object without properties", where)
		}
	}
	if items, ok := m["items"]; ok {
		plain(t, where+"[]", items)
	}
}

// Every tool's input schema, as tools/list answers it, is plain.
func TestSchemasArePlain(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, "memory")
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		b, _ := json.Marshal(tool.InputSchema)
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		plain(t, tool.Name, v)
	}
	if got := strings.Join(names, ","); got != "close_session,computer,list_sessions,navigate,open_session,snapshot" {
		t.Errorf("tools = %s", got)
	}
}

// A wrong argument is answered in the schema's words: what the argument
// must be, what it was, and never a Go type or package name; nothing
// runs.
func TestWrongArgumentsInWords(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, "memory")
	call(t, cs, ToolComputer, map[string]any{"kind": "screenshot"})
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"kind": "click", "at": `{"x":227,"y":141}`}, `"at" must be an object, not a string`},
		{map[string]any{"kind": 3}, `"kind" must be a string, not an integer 3`},
		{map[string]any{"kind": "jump"}, `"kind" is "jump"; want one of screenshot, click`},
		{map[string]any{"kind": "scroll", "at": map[string]any{"x": 1, "y": 2}, "dy": "300"}, `"dy" must be a number, not a string`},
		{map[string]any{"kind": "click", "button": "huge", "at": map[string]any{"x": 1, "y": 2}}, `"button" is "huge"; want one of left`},
		{map[string]any{"kind": "drag", "path": []any{"1,2", "3,4"}}, `"path[0]" must be an object, not a string`},
		{map[string]any{"kind": "keypress", "keys": "ctrl+a"}, `"keys" must be an array, not a string`},
		{map[string]any{"kind": "zoom", "region": map[string]any{"min": map[string]any{"x": 1, "y": 1}}}, `"region.max" is required`},
		{map[string]any{"kind": "click", "at": map[string]any{"x": 1}}, `"at" needs both x and y`},
		{map[string]any{"kind": "click", "at": map[string]any{"x": 1, "y": 2, "ref": "e1"}}, `"at" has a ref and pixels`},
		{map[string]any{"kind": "switch_tab", "tab": 1.5}, `"tab" must be a whole number`},
		{map[string]any{"actions": []any{map[string]any{"kind": "click", "at": []any{1, 2}}}}, `"actions[0].at" must be an object, not an array`},
		{map[string]any{"actions": []any{map[string]any{"at": map[string]any{"x": 1, "y": 2}}}}, `"actions[0].kind" is required`},
	} {
		n, images, errText := call(t, cs, ToolComputer, c.args)
		if !strings.Contains(errText, c.want) {
			t.Errorf("computer %v: error %q, want it to say %q", c.args, errText, c.want)
		}
		for _, gone := range []string{"Go ", "struct", "unmarshal", "actions.", "float64", "[]string"} {
			if strings.Contains(errText, gone) {
				t.Errorf("computer %v: error %q names %q", c.args, errText, gone)
			}
		}
		if n.Ran != 0 || len(images) != 0 {
			t.Errorf("computer %v: ran %d with %d images, want a refusal before anything runs", c.args, n.Ran, len(images))
		}
	}
	// The other tools check theirs the same way.
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{ToolNavigate, map[string]any{}, `"url" is required`},
		{ToolNavigate, map[string]any{"url": 7}, `"url" must be a string`},
		{ToolCloseSession, map[string]any{"session": true}, `"session" must be a string, not a boolean`},
		{ToolOpenSession, map[string]any{"start": "x"}, `unknown argument "start"`},
		{ToolSnapshot, map[string]any{"session": 1}, `"session" must be a string`},
	} {
		_, _, errText := call(t, cs, c.tool, c.args)
		if !strings.Contains(errText, c.want) {
			t.Errorf("%s %v: error %q, want it to say %q", c.tool, c.args, errText, c.want)
		}
	}
	f.mu.Lock()
	performed := f.displays[0].Performed()
	f.mu.Unlock()
	if len(performed) != 0 {
		t.Errorf("refused calls performed %+v", performed)
	}
}

// On a display without a DOM, snapshot and element references say so.
func TestRefsNeedADOM(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, "memory")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{ToolSnapshot, nil},
		{ToolComputer, map[string]any{"kind": "click", "at": map[string]any{"ref": "e1"}}},
	} {
		_, _, errText := call(t, cs, c.tool, c.args)
		if !strings.Contains(errText, "no DOM") {
			t.Errorf("%s %v on a display without a DOM: error %q, want it to say it has no DOM", c.tool, c.args, errText)
		}
	}
}
