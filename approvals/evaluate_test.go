package approvals

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// TestKeyboardAndDialogFindings covers the branches of the keyboard and
// dialog rules that TestDefaultRules does not: keys that follow a focused
// link or submit a form outside the allowed hosts, and accepting a dialog
// the display cannot name.
func TestKeyboardAndDialogFindings(t *testing.T) {
	field := &screen.Target{Tag: "input", Role: "textbox", InputType: "text", Name: "Query", Editable: true,
		FormAction: "https://collector.example/q"}
	link := &screen.Target{Tag: "a", Role: "link", Name: "Partner", Href: "https://evil.example/"}
	tests := []struct {
		name        string
		a           actions.Action
		target      *screen.Target
		dialogKnown bool
		want        []string
	}{
		{"Enter on an outside link", keypress(t, "Enter"), link, true, []string{RuleOutside}},
		{"Enter on a policy-host link", keypress(t, "Enter"), &screen.Target{Tag: "a", Href: "https://www.shop.example/"}, true, nil},
		{"Enter in a field posting outside", keypress(t, "Enter"), field, true, []string{RuleOutside}},
		{"typed newline in a field posting outside", actions.Action{Kind: actions.Type, Text: "q\n"}, field, true, []string{RuleOutside}},
		{"typing without a newline", actions.Action{Kind: actions.Type, Text: "q"}, field, true, nil},
		{"Enter in a textarea", keypress(t, "Enter"), &screen.Target{Tag: "textarea", Editable: true, FormAction: "https://collector.example/"}, true, nil},
		{"accept a dialog on a display that cannot name it", actions.Action{Kind: actions.Dialog, Accept: true}, nil, false, []string{RuleLeavePage}},
		{"dismiss a dialog on a display that cannot name it", actions.Action{Kind: actions.Dialog}, nil, false, nil},
	}
	r := Default()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := subject(t, tt.a, tt.target)
			s.DialogKnown = tt.dialogKnown
			if diff := cmp.Diff(tt.want, rulesOf(r.Evaluate(s))); diff != "" {
				t.Errorf("Evaluate(%s) rules (-want +got):\n%s", tt.name, diff)
			}
		})
	}
}
