package cassette

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMatchBody(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Match
	}{
		{"anthropic first turn",
			`{"model":"claude-sonnet-4-5","tools":[{"type":"computer_20250124","name":"computer","display_width_px":1280,"display_height_px":800}],
			  "messages":[{"role":"user","content":[{"type":"image","source":{}},{"type":"text","text":"go"}]}]}`,
			Match{Model: "claude-sonnet-4-5", Tool: "computer_20250124", Display: "1280x800"}},
		{"anthropic later turn: only the newest results",
			`{"model":"m","messages":[
			  {"role":"user","content":"task"},
			  {"role":"assistant","content":[{"type":"tool_use","id":"t1"}]},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]},
			  {"role":"assistant","content":[{"type":"tool_use","id":"t2"},{"type":"tool_use","id":"t3"}]},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"t2"},{"type":"tool_result","tool_use_id":"t3"},{"type":"text","text":"note"}]}]}`,
			Match{Model: "m", Answers: []string{"t2", "t3"}}},
		{"anthropic paused turn sent back: no results after the assistant message",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]},{"role":"assistant","content":"partial"}]}`,
			Match{Model: "m"}},
		{"chat completions",
			`{"model":"ui-tars","tools":[{"type":"function","function":{"name":"click"}}],"messages":[
			  {"role":"system","content":"s"},{"role":"assistant","tool_calls":[{"id":"a"},{"id":"b"}]},
			  {"role":"tool","tool_call_id":"a","content":"ok"},{"role":"tool","tool_call_id":"b","content":"ok"},
			  {"role":"user","content":[{"type":"image_url"}]}]}`,
			Match{Model: "ui-tars", Answers: []string{"a", "b"}}},
		{"responses with history",
			`{"model":"gpt-5.4","tools":[{"type":"computer"}],"input":[
			  {"role":"user","content":"task"},
			  {"type":"reasoning","id":"rs_1"},{"type":"computer_call","call_id":"c1"},
			  {"type":"computer_call_output","call_id":"c1"},
			  {"type":"reasoning","id":"rs_2"},{"type":"computer_call","call_id":"c2"},{"type":"function_call","call_id":"f3"},
			  {"type":"computer_call_output","call_id":"c2"},{"type":"function_call_output","call_id":"f3"},
			  {"type":"message","role":"user","content":"more"}]}`,
			Match{Model: "gpt-5.4", Tool: "computer", Answers: []string{"c2", "f3"}}},
		{"responses preview with previous_response_id",
			`{"model":"computer-use-preview","previous_response_id":"resp_1",
			  "tools":[{"type":"computer_use_preview","display_width":1024,"display_height":640,"environment":"browser"}],
			  "input":[{"type":"computer_call_output","call_id":"c9"}]}`,
			Match{Model: "computer-use-preview", Tool: "computer_use_preview", Display: "1024x640", Answers: []string{"c9"}}},
		{"responses string input", `{"model":"gpt","input":"hello"}`, Match{Model: "gpt"}},
		{"gemini",
			`{"tools":[{"functionDeclarations":[]},{"computerUse":{"environment":"ENVIRONMENT_BROWSER"}}],"contents":[
			  {"role":"user","parts":[{"text":"task"}]},
			  {"role":"model","parts":[{"functionCall":{"id":"g1","name":"click_at"}}]},
			  {"role":"user","parts":[{"functionResponse":{"id":"g1","name":"click_at"}}]},
			  {"role":"model","parts":[{"functionCall":{"name":"type_text_at"}},{"functionCall":{"id":"g3","name":"wait"}}]},
			  {"role":"user","parts":[{"functionResponse":{"name":"type_text_at"}},{"function_response":{"id":"g3"}}]}]}`,
			Match{Tool: "computer_use", Answers: []string{"type_text_at", "g3"}}},
		{"gemini snake case tool", `{"tools":[{"computer_use":{}}],"contents":[]}`, Match{Tool: "computer_use"}},
		{"fields of unexpected types", `{"model":7,"tools":"x","messages":{"a":1},"input":5}`, Match{}},
		{"model right, the rest odd", `{"model":"m","tools":[1,"x",{"type":"computer_20251124"}],"messages":[1,{"role":"user","content":[2]}]}`,
			Match{Model: "m", Tool: "computer_20251124"}},
		{"not an object", `[1,2]`, Match{}},
		{"not JSON", `model=x`, Match{}},
		{"empty", ``, Match{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MatchBody([]byte(tt.body))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("MatchBody(%.80q) (-want +got):\n%s", tt.body, diff)
			}
		})
	}
}
