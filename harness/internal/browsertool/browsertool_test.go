package browsertool

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name, args string
		want       actions.Action
		err        string
	}{
		{"list_tabs", ``, actions.Action{Kind: actions.ListTabs}, ""},
		{"list_tabs", `{}`, actions.Action{Kind: actions.ListTabs}, ""},
		{"list_tabs", ` null `, actions.Action{Kind: actions.ListTabs}, ""}, // Gemini left args out
		{"switch_tab", `null`, actions.Action{}, `invalid action: switch_tab: missing "tab"`},
		{"switch_tab", `{"tab": 2}`, actions.Action{Kind: actions.SwitchTab, Tab: 2}, ""},
		{"close_tab", `{"tab": 0}`, actions.Action{Kind: actions.CloseTab}, ""},
		{"dialog", `{"accept": true, "text": "Ada"}`, actions.Action{Kind: actions.Dialog, Accept: true, Text: "Ada"}, ""},
		{"dialog", `{"accept": false, "text": null}`, actions.Action{Kind: actions.Dialog}, ""},
		{"upload", `{"files": ["cv.pdf"]}`, actions.Action{Kind: actions.Upload, Files: []string{"cv.pdf"}}, ""},
		{"switch_tab", `{}`, actions.Action{}, `invalid action: switch_tab: missing "tab"`},
		{"switch_tab", `{"tab": 1.5}`, actions.Action{}, `invalid action: switch_tab: "tab" must be a tab number (0, 1, ...), got "1.5"`},
		{"close_tab", `{"tab": -1}`, actions.Action{}, `invalid action: close_tab: "tab" must be a tab number (0, 1, ...), got "-1"`},
		{"dialog", `{"accept": "yes"}`, actions.Action{}, `invalid action: dialog: "accept" must be true or false, got "\"yes\""`},
		{"dialog", `{"accept": true, "text": 3}`, actions.Action{}, `invalid action: dialog: "text" must be a string, got "3"`},
		{"upload", `{"files": []}`, actions.Action{}, `invalid action: upload: "files" must be a list of one or more file names, got "[]"`},
		{"upload", `[]`, actions.Action{}, `invalid action: upload: the arguments are not a JSON object`},
		{"nope", `{}`, actions.Action{}, `invalid action: "nope": unknown browser action (want one of list_tabs, switch_tab, close_tab, dialog, upload)`},
	}
	for _, tt := range tests {
		got, err := Decode(tt.name, json.RawMessage(tt.args))
		if tt.err != "" {
			if !errors.Is(err, actions.ErrInvalid) || err.Error() != tt.err {
				t.Errorf("Decode(%s, %s) = %v, want ErrInvalid %q", tt.name, tt.args, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Decode(%s, %s) error: %v", tt.name, tt.args, err)
		} else if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Decode(%s, %s) (-want +got):\n%s", tt.name, tt.args, diff)
		}
	}
}

func TestDecodeTool(t *testing.T) {
	got, err := DecodeTool(json.RawMessage(`{"action": "switch_tab", "tab": 1}`))
	if err != nil || got.Kind != actions.SwitchTab || got.Tab != 1 {
		t.Errorf("DecodeTool(switch_tab 1) = %+v, %v", got, err)
	}
	for _, in := range []string{`{}`, `{"action": 3}`, `"x"`, ``} {
		if _, err := DecodeTool(json.RawMessage(in)); !errors.Is(err, actions.ErrInvalid) {
			t.Errorf("DecodeTool(%s) = %v, want ErrInvalid", in, err)
		}
	}
}

// FuzzDecode: any input decodes to an action that validates, or to an
// ErrInvalid; never a panic.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"action":"list_tabs"}`, `{"action":"switch_tab","tab":3}`, `{"action":"close_tab","tab":1e300}`,
		`{"action":"dialog","accept":true,"text":"x"}`, `{"action":"upload","files":["a","b"]}`, `{"action":null}`, `[1]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		a, err := DecodeTool(json.RawMessage(in))
		if err != nil {
			if !errors.Is(err, actions.ErrInvalid) {
				t.Fatalf("DecodeTool(%q) error %v does not wrap ErrInvalid", in, err)
			}
			return
		}
		if err := a.Validate(actions.Limits{}); err != nil {
			t.Fatalf("DecodeTool(%q) = %+v, which does not validate: %v", in, a, err)
		}
	})
}
